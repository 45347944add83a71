//! The retry of a request whose pooled keep-alive connection the server had closed, against a
//! scripted HTTP/1.1 server on 127.0.0.1: what each connection does with each request it reads
//! is fixed in advance, so every case is deterministic.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::timeout;

use crate::client::test_http::read_request;
use crate::client::{Client, Endpoint, RequestConfig, RunClock};
use crate::record::{ErrorKind, RequestRecord};
use crate::workload::RequestSpec;

/// Every wait in these tests ends: no test hangs on a broken server or client.
const BOUND: Duration = Duration::from_secs(10);
/// At most this many connections are accepted.
const MAX_CONNECTIONS: usize = 4;
const EVENTS: &str = "data: {\"choices\":[{\"text\":\"hi\"}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

/// What a connection does with one request it read.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// A complete streamed response, the connection kept open (keep-alive, no `Connection:
    /// close`).
    Full,
    /// Closes the connection without a byte of response: a keep-alive timeout that crossed
    /// the request.
    Close,
    /// The head and one event of a chunked response, then closes.
    HalfThenClose,
}

/// A server running `scripts[k]` on its k-th connection (a connection past the scripts is
/// closed at once); counts the connections it accepted.
struct ScriptedServer {
    base_url: String,
    accepted: Arc<AtomicUsize>,
    stop: oneshot::Sender<()>,
}

impl ScriptedServer {
    async fn start(scripts: Vec<Vec<Answer>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let base_url = format!("http://{}", listener.local_addr().expect("an address"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (stop, mut stopped) = oneshot::channel();
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            for k in 0..MAX_CONNECTIONS {
                let stream = tokio::select! {
                    _ = &mut stopped => return,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => return,
                    },
                };
                count.fetch_add(1, Ordering::SeqCst);
                let script = scripts.get(k).cloned().unwrap_or_default();
                tokio::spawn(timeout(BOUND, serve(stream, script)));
            }
        });
        Self {
            base_url,
            accepted,
            stop,
        }
    }

    /// Stops accepting; the number of connections accepted.
    fn finish(self) -> usize {
        let _ = self.stop.send(());
        self.accepted.load(Ordering::SeqCst)
    }
}

async fn serve(mut stream: TcpStream, script: Vec<Answer>) {
    for answer in script {
        if read_request(&mut stream).await.is_none() {
            return;
        }
        match answer {
            Answer::Full => {
                let body = format!("{EVENTS}{DONE}");
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
            }
            Answer::Close => return,
            Answer::HalfThenClose => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                let chunk = format!("{:x}\r\n{EVENTS}\r\n", EVENTS.len());
                let _ = stream.write_all(format!("{head}{chunk}").as_bytes()).await;
                let _ = stream.flush().await;
                return;
            }
        }
    }
}

fn client(base_url: &str, pool_idle_timeout: Duration) -> Client {
    let mut config = RequestConfig::new(Endpoint::Completions, base_url, "m");
    config.timeout = BOUND;
    config.pool_idle_timeout = pool_idle_timeout;
    Client::new(config).expect("a client")
}

async fn send(client: &Client, index: usize) -> RequestRecord {
    let spec = RequestSpec::text("hello", 1, 1);
    let clock = RunClock {
        start: std::time::Instant::now(),
    };
    let record = timeout(BOUND, client.send(index, &spec, 0.0, clock, None))
        .await
        .expect("the request ends");
    // The finished connection goes back to the pool from a task of its own: let it run.
    tokio::time::sleep(Duration::from_millis(100)).await;
    record
}

#[tokio::test]
async fn a_pooled_connection_closed_before_the_response_is_retried_once() {
    let server =
        ScriptedServer::start(vec![vec![Answer::Full, Answer::Close], vec![Answer::Full]]).await;
    let client = client(&server.base_url, Duration::from_secs(4));
    let first = send(&client, 0).await;
    assert_eq!(first.error_message, None);
    assert_eq!(first.num_retries, 0);
    let second = send(&client, 1).await;
    assert_eq!(second.error_message, None, "the retry succeeds");
    assert_eq!(second.num_retries, 1);
    assert_eq!(second.output_tokens, 1);
    assert_eq!(server.finish(), 2, "the retry opened a fresh connection");
}

#[tokio::test]
async fn a_connection_closed_in_the_middle_of_the_response_is_not_retried() {
    let server = ScriptedServer::start(vec![vec![Answer::HalfThenClose]]).await;
    let client = client(&server.base_url, Duration::from_secs(4));
    let record = send(&client, 0).await;
    assert_eq!(record.error, Some(ErrorKind::Connection));
    assert_eq!(record.num_retries, 0);
    assert_eq!(record.chunk_times_s.len(), 1, "the first event arrived");
    assert_eq!(server.finish(), 1, "no second connection");
}

#[tokio::test]
async fn a_zero_idle_timeout_keeps_no_connection() {
    // Were the first connection reused, the second request would meet `Close` and be retried.
    let server =
        ScriptedServer::start(vec![vec![Answer::Full, Answer::Close], vec![Answer::Full]]).await;
    let client = client(&server.base_url, Duration::ZERO);
    for index in 0..2 {
        let record = send(&client, index).await;
        assert_eq!(record.error_message, None);
        assert_eq!(record.num_retries, 0);
    }
    assert_eq!(server.finish(), 2);
}
