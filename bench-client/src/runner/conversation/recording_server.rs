//! Tests only: an HTTP/1.1 chat server on 127.0.0.1 that records what every request carried and
//! when it arrived, and answers each after a fixed delay with a streamed reply unique to it
//! (`reply-<n>`, `n` counting requests from 0), so a test can check on the server's side when
//! each turn arrived, what history it carried and how many conversations were in flight.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// When its last byte was read.
    pub arrived: Instant,
    /// When its response had been written.
    pub answered: Option<Instant>,
    /// Lowercase header names and their values.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The reply it was given.
    pub reply: String,
}

impl Arrival {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `content` of every message the request carried.
    pub fn contents(&self) -> Vec<String> {
        let messages = self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .iter()
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect()
    }
}

/// What the server saw, shared with its connections.
#[derive(Debug, Default)]
struct Log {
    arrivals: Vec<Arrival>,
    in_flight: usize,
    peak_in_flight: usize,
}

/// The server; stops accepting when dropped (connections in progress finish).
pub struct RecordingServer {
    pub base_url: String,
    log: Arc<Mutex<Log>>,
    accept: tokio::task::JoinHandle<()>,
}

impl RecordingServer {
    /// Answers every request `delay` after it arrived; the request numbered `fail_request` (if
    /// any) with HTTP 500.
    pub async fn start(delay: Duration, fail_request: Option<usize>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let base_url = format!("http://{}", listener.local_addr().expect("an address"));
        let log = Arc::new(Mutex::new(Log::default()));
        let shared = Arc::clone(&log);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = Arc::clone(&shared);
                tokio::spawn(serve(stream, log, delay, fail_request));
            }
        });
        Self {
            base_url,
            log,
            accept,
        }
    }

    /// Every request so far, in arrival order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.log.lock().expect("lock").arrivals.clone()
    }

    /// The most requests the server had in hand at once.
    pub fn peak_in_flight(&self) -> usize {
        self.log.lock().expect("lock").peak_in_flight
    }
}

impl Drop for RecordingServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Log>>, delay: Duration, fail: Option<usize>) {
    while let Some((headers, body)) = read_request(&mut stream).await {
        let arrived = Instant::now();
        let number = {
            let mut log = log.lock().expect("lock");
            log.in_flight += 1;
            log.peak_in_flight = log.peak_in_flight.max(log.in_flight);
            log.arrivals.push(Arrival {
                arrived,
                answered: None,
                headers,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                reply: String::new(),
            });
            log.arrivals.len() - 1
        };
        tokio::time::sleep(delay).await;
        let reply = format!("reply-{number}");
        let response = if fail == Some(number) {
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n".to_string()
        } else {
            let prompt_tokens = 10 * (number + 1);
            streamed(&reply, prompt_tokens)
        };
        let written = stream.write_all(response.as_bytes()).await;
        let mut log = log.lock().expect("lock");
        log.in_flight -= 1;
        let arrival = &mut log.arrivals[number];
        arrival.answered = Some(Instant::now());
        arrival.reply = reply;
        if written.is_err() {
            return;
        }
    }
}

/// A complete streamed chat response: one content chunk, the usage, `[DONE]`.
fn streamed(reply: &str, prompt_tokens: usize) -> String {
    let body = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{reply}\"}}}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\
         \"completion_tokens\":1,\"total_tokens\":{}}}}}\n\n\
         data: [DONE]\n\n",
        prompt_tokens + 1
    );
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads one request: its headers (names lowercased) and its `content-length` body; `None` at
/// the end of the connection.
async fn read_request(stream: &mut TcpStream) -> Option<(Vec<(String, String)>, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 8192];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let headers: Vec<(String, String)> = head
                .lines()
                .skip(1)
                .filter_map(|line| line.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let length: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let body_start = end + 4;
            if buffer.len() >= body_start + length {
                return Some((headers, buffer[body_start..body_start + length].to_vec()));
            }
        }
        match stream.read(&mut piece).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&piece[..n]),
        }
    }
}
