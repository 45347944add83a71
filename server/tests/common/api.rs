//! HTTP helpers for the tests that drive `pagoda-server`: JSON requests, OpenAI error checks,
//! SSE streams read event by event, and `/metrics` scrapes.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use super::prom::Scrape;
use super::server::ServerProcess;

/// A client with a generous overall timeout, so a hung server fails the test instead of hanging it.
pub fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a reqwest client")
}

/// A finished response: status, headers and the whole body.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub async fn read(response: Response) -> Self {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.expect("the body arrives").to_vec();
        Self {
            status,
            headers,
            body,
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Checks the OpenAI error shape (`{"error": {"message", "type", "param", "code"}}`, JSON
    /// content type) and returns the `error` object, or says what is wrong with it.
    pub fn openai_error(&self) -> Result<Value, String> {
        let content_type = self.header(CONTENT_TYPE.as_str()).unwrap_or("");
        if !content_type.starts_with("application/json") {
            return Err(format!(
                "content-type {content_type:?}, not application/json"
            ));
        }
        let body: Value = serde_json::from_slice(&self.body)
            .map_err(|e| format!("body is not JSON ({e}): {}", self.text()))?;
        let error = body
            .get("error")
            .filter(|e| e.is_object())
            .ok_or_else(|| format!("no `error` object: {body}"))?;
        let message_ok = error["message"].as_str().is_some_and(|m| !m.is_empty());
        let type_ok = error["type"].as_str().is_some_and(|t| !t.is_empty());
        let param_ok = error
            .get("param")
            .is_some_and(|p| p.is_null() || p.is_string());
        let code_ok = error
            .get("code")
            .is_some_and(|c| c.is_null() || c.is_string() || c.is_number());
        if !(message_ok && type_ok && param_ok && code_ok) {
            return Err(format!(
                "not OpenAI-shaped (message, type, param, code): {body}"
            ));
        }
        Ok(error.clone())
    }

    /// [`Reply::openai_error`], panicking on a bad shape.
    pub fn expect_openai_error(&self) -> Value {
        self.openai_error()
            .unwrap_or_else(|e| panic!("{} {e}", self.status))
    }
}

/// POSTs `body` as JSON and reads the whole reply.
pub async fn post_json(client: &Client, url: &str, body: &Value) -> Reply {
    let response = client
        .post(url)
        .json(body)
        .send()
        .await
        .expect("the request is answered");
    Reply::read(response).await
}

/// GETs `url` and reads the whole reply.
pub async fn get(client: &Client, url: &str) -> Reply {
    let response = client
        .get(url)
        .send()
        .await
        .expect("the request is answered");
    Reply::read(response).await
}

/// Scrapes and parses `/metrics`.
pub async fn scrape(client: &Client, server: &ServerProcess) -> Scrape {
    let reply = get(client, &server.url("/metrics")).await;
    assert_eq!(reply.status, StatusCode::OK, "/metrics: {}", reply.text());
    Scrape::parse(&reply.text())
}

/// Polls `/metrics` until `done` holds: `Ok` with that scrape, or `Err` with the last one after
/// `timeout`.
pub async fn poll_metrics(
    client: &Client,
    server: &ServerProcess,
    timeout: Duration,
    done: impl Fn(&Scrape) -> bool,
) -> Result<Scrape, Scrape> {
    let deadline = Instant::now() + timeout;
    loop {
        let scrape = scrape(client, server).await;
        if done(&scrape) {
            return Ok(scrape);
        }
        if Instant::now() >= deadline {
            return Err(scrape);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The samples of a scrape without its buckets and comments, for failure messages.
pub fn brief(scrape: &Scrape) -> String {
    let lines: Vec<&str> = scrape
        .text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains("_bucket{"))
        .collect();
    lines.join("\n")
}

/// [`poll_metrics`], failing the test after `timeout` with the last scrape.
pub async fn wait_for_metrics(
    client: &Client,
    server: &ServerProcess,
    timeout: Duration,
    done: impl Fn(&Scrape) -> bool,
) -> Scrape {
    poll_metrics(client, server, timeout, done)
        .await
        .unwrap_or_else(|last| {
            panic!(
                "metrics did not settle within {timeout:?}; last scrape (buckets left out):\n{}",
                brief(&last)
            )
        })
}

/// The engine gauges that say "idle": nothing running or waiting, no KV block held.
pub fn engine_idle(scrape: &Scrape, namespace: &str) -> bool {
    let gauge = |base: &str| scrape.sum(&format!("{namespace}:{base}"), &[]);
    gauge("num_requests_running") == 0.0
        && gauge("num_requests_waiting") == 0.0
        && gauge("kv_cache_usage_perc") == 0.0
}

/// Runs `future` with a deadline, panicking with `what` past it.
pub async fn within<T>(timeout: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {timeout:?}"))
}

/// A chat request body with one user message.
pub fn chat_body(content: &str, max_tokens: u64, stream: bool) -> Value {
    serde_json::json!({
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "ignore_eos": true,
        "stream": stream,
    })
}

/// Reads a Server-Sent Events response one event at a time.
pub struct SseReader {
    stream: futures_util::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: Vec<u8>,
}

impl SseReader {
    pub fn new(response: Response) -> Self {
        let stream = response
            .bytes_stream()
            .map(|chunk| chunk.map(|b| b.to_vec()))
            .boxed();
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    /// The `data:` payload of the next event (comments such as keep-alives are skipped);
    /// `Ok(None)` when the stream ends, `Err` when the connection fails.
    pub async fn next_data(&mut self) -> Result<Option<String>, String> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let event =
                    String::from_utf8(raw).map_err(|e| format!("an event is not UTF-8: {e}"))?;
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Ok(Some(data.join("\n")));
            }
            match self.stream.next().await {
                Some(Ok(bytes)) => self.buffer.extend_from_slice(&bytes),
                Some(Err(e)) => return Err(format!("the stream failed: {e}")),
                None if self.buffer.iter().all(u8::is_ascii_whitespace) => return Ok(None),
                None => {
                    let rest = String::from_utf8_lossy(&self.buffer);
                    return Err(format!("the stream ended mid-event: {rest:?}"));
                }
            }
        }
    }

    /// Every remaining payload, up to the end of the stream.
    pub async fn rest(&mut self) -> Result<Vec<String>, String> {
        let mut all = Vec::new();
        while let Some(data) = self.next_data().await? {
            all.push(data);
        }
        Ok(all)
    }
}

/// What a finished chat or completion stream said: its text, finish reasons, error events.
#[derive(Debug, Default)]
pub struct StreamSummary {
    pub num_content_chunks: usize,
    pub text: String,
    pub finish_reasons: Vec<String>,
    pub errors: Vec<Value>,
    /// The last non-null `usage` (with `stream_options.include_usage`).
    pub usage: Option<Value>,
    pub ended_with_done: bool,
}

/// Sums up a stream's `data:` payloads (chat deltas or completion texts).
pub fn summarize(payloads: &[String]) -> StreamSummary {
    let mut summary = StreamSummary::default();
    for (i, payload) in payloads.iter().enumerate() {
        if payload == "[DONE]" {
            summary.ended_with_done = i + 1 == payloads.len();
            continue;
        }
        let chunk: Value = serde_json::from_str(payload)
            .unwrap_or_else(|e| panic!("chunk not JSON ({e}): {payload}"));
        if chunk.get("error").is_some() {
            summary.errors.push(chunk);
            continue;
        }
        if chunk["usage"].is_object() {
            summary.usage = Some(chunk["usage"].clone());
        }
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            let piece = choice["delta"]["content"]
                .as_str()
                .or(choice["text"].as_str());
            if let Some(piece) = piece.filter(|p| !p.is_empty()) {
                summary.num_content_chunks += 1;
                summary.text.push_str(piece);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                summary.finish_reasons.push(reason.to_string());
            }
        }
    }
    summary
}
