//! [`Client::send`]: one streamed request, timed on the run's monotonic clock.
//!
//! Timing points: `actual_send_s` is taken after the body is serialised and just before the
//! request is handed to the connection (so it includes connecting, as the server sees it: a
//! cold connection's handshake is part of TTFT, as in `vllm bench serve`); every content chunk
//! is stamped when the read that completed it returned; `end_s` when `[DONE]` arrived, or when
//! the request failed. A whole JSON response instead of a stream is one content chunk stamped
//! when its body ended (TTFT = end-to-end latency, as `vllm bench serve` times a non-streamed
//! request). A request retried because its pooled connection was found closed (see
//! `stale`) keeps its first `actual_send_s`: the lost round trip is part of its latency.

use std::time::Instant;

use reqwest::header::{HeaderMap, CONTENT_TYPE};
use tokio::time::timeout_at;

use super::clock::RunClock;
use super::config::Endpoint;
use super::http::Client;
use super::openai::{error_body_message, ChatCompletionRequest, CompletionRequest, StreamOptions};
use super::stale::closed_before_response;
use super::stream::{clip, Flow, StreamParser, TokenCounter};
use crate::record::{ErrorKind, RequestRecord};
use crate::workload::RequestSpec;

/// How much of an error response's body is read for its message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// How long the end of a body is awaited after `[DONE]`.
const MAX_DRAIN: std::time::Duration = std::time::Duration::from_millis(50);

/// A failure: its kind and text.
type Failure = (ErrorKind, String);

/// One request to send: what [`Client::send`] and [`Client::send_turn`] share.
struct Exchange<'a> {
    index: usize,
    spec: &'a RequestSpec,
    target_send_s: f64,
    clock: RunClock,
    tokenizer: Option<&'a TokenCounter>,
    /// Added to the client's default headers.
    headers: HeaderMap,
    /// Return the reply's text (for a conversation's history).
    keep_reply: bool,
    /// Subject to `--request-cancellation-rate` (independent requests, not turns).
    may_cancel: bool,
}

impl Client {
    /// Sends request `index` (`spec`), due at `target_send_s` on `clock`, and records it. Never
    /// fails: a failure is the record's `error`. `tokenizer` counts the generated text when the
    /// server sends no usage.
    pub async fn send(
        &self,
        index: usize,
        spec: &RequestSpec,
        target_send_s: f64,
        clock: RunClock,
        tokenizer: Option<&TokenCounter>,
    ) -> RequestRecord {
        let exchange = Exchange {
            index,
            spec,
            target_send_s,
            clock,
            tokenizer,
            headers: HeaderMap::new(),
            keep_reply: false,
            may_cancel: true,
        };
        self.exchange(exchange).await.0
    }

    /// [`Client::send`] for one turn of a conversation: `headers` added to the request (the
    /// session header), and the reply's text returned with the record (`""` when none came),
    /// whether or not the run keeps generated texts.
    pub async fn send_turn(
        &self,
        index: usize,
        spec: &RequestSpec,
        target_send_s: f64,
        clock: RunClock,
        tokenizer: Option<&TokenCounter>,
        headers: HeaderMap,
    ) -> (RequestRecord, String) {
        let exchange = Exchange {
            index,
            spec,
            target_send_s,
            clock,
            tokenizer,
            headers,
            keep_reply: true,
            may_cancel: false,
        };
        let (record, reply) = self.exchange(exchange).await;
        (record, reply.unwrap_or_default())
    }

    /// Sends one request and records it; the reply's text too when `keep_reply`.
    async fn exchange(&self, exchange: Exchange<'_>) -> (RequestRecord, Option<String>) {
        let Exchange {
            index,
            spec,
            target_send_s,
            clock,
            tokenizer,
            headers,
            keep_reply,
            may_cancel,
        } = exchange;
        let body = self.body(spec);
        let sent = Instant::now();
        let deadline = tokio::time::Instant::from_std(sent + self.config.timeout);
        let keep_text = self.config.keep_generated_text;
        let mut parser = StreamParser::new(keep_text || keep_reply || tokenizer.is_some());
        let cancel_after = self
            .config
            .cancellation
            .filter(|_| may_cancel)
            .and_then(|cancellation| cancellation.delay_for(index));
        let mut num_retries = 0;
        let exchanged = async {
            let (response, retries) = self.send_retrying(index, body, headers, deadline).await;
            num_retries = retries;
            match response {
                Ok(response) => read_response(response, deadline, clock, &mut parser).await,
                Err(failure) => Err(failure),
            }
        };
        let outcome = match cancel_after {
            // Dropping the exchange closes its connection: the server sees the client go.
            Some(delay) => timeout_at(tokio::time::Instant::from_std(sent + delay), exchanged)
                .await
                .unwrap_or_else(|_| Err(cancelled(delay))),
            None => exchanged.await,
        };
        let end = match &outcome {
            Ok(done_at) => *done_at,
            Err(_) => Instant::now(),
        };
        let result = parser.into_result();
        let (output_tokens, token_count_source) = result.output_tokens(tokenizer);
        let reply = if keep_reply {
            result.text.clone()
        } else {
            None
        };
        let generated_text = if keep_text { result.text } else { None };
        let (error, error_message) = match outcome {
            Ok(_) => (None, None),
            Err((kind, message)) => (Some(kind), Some(message)),
        };
        let record = RequestRecord {
            index,
            client_id: self.config.client_id,
            model: Some(self.model_of(spec).to_string()),
            conversation: None,
            target_send_s,
            actual_send_s: clock.secs(sent),
            first_token_s: result.chunk_times_s.first().copied(),
            input_tokens: result.usage.map_or(spec.input_tokens, |u| u.prompt_tokens),
            chunk_times_s: result.chunk_times_s,
            end_s: clock.secs(end),
            output_tokens,
            token_count_source,
            expected_output_tokens: spec.output_tokens,
            error,
            error_message,
            num_retries,
            generated_text,
        };
        (record, reply)
    }

    /// Sends `body`; once more, on a fresh connection, when the pooled connection turned out
    /// closed before any of the response arrived (see `stale`): never a request that met a
    /// timeout or received anything. The response (its head) and the number of retries (0, 1).
    async fn send_retrying(
        &self,
        index: usize,
        body: Vec<u8>,
        headers: HeaderMap,
        deadline: tokio::time::Instant,
    ) -> (Result<reqwest::Response, Failure>, u32) {
        let mut request = self.http.post(&self.url).headers(headers).body(body);
        if let Some(prefix) = &self.config.request_id_prefix {
            request = request.header("x-request-id", format!("{prefix}{index}"));
        }
        let request = match request.build() {
            Ok(request) => request,
            Err(error) => return (Err(transport_failure(error)), 0),
        };
        // A body built from bytes clones cheaply (shared, not copied).
        let retry = request.try_clone();
        let first = timeout_at(deadline, self.http.execute(request)).await;
        match (first, retry) {
            (Ok(Err(error)), Some(retry)) if closed_before_response(&error) => {
                let second = timeout_at(deadline, self.fresh.execute(retry)).await;
                (response_or_failure(second), 1)
            }
            (first, _) => (response_or_failure(first), 0),
        }
    }

    /// The `model` of `spec`'s request: its own (a LoRA adapter), else the run's.
    pub fn model_of<'a>(&'a self, spec: &'a RequestSpec) -> &'a str {
        spec.model.as_deref().unwrap_or(&self.config.model)
    }

    /// The JSON body of `spec`'s request, the structured-output fields added, `extra_body`
    /// merged in last.
    pub fn body(&self, spec: &RequestSpec) -> Vec<u8> {
        let config = &self.config;
        let sampling = &config.sampling;
        let stream_options = StreamOptions {
            include_usage: true,
        };
        let value = match config.endpoint {
            Endpoint::Chat => serde_json::to_value(ChatCompletionRequest {
                model: self.model_of(spec),
                messages: &spec.prompt.as_messages(),
                max_tokens: spec.output_tokens,
                max_completion_tokens: spec.output_tokens,
                stream: true,
                stream_options,
                temperature: sampling.temperature,
                top_p: sampling.top_p,
                ignore_eos: sampling.ignore_eos,
            }),
            Endpoint::Completions => serde_json::to_value(CompletionRequest {
                model: self.model_of(spec),
                prompt: &spec.prompt.as_text(),
                max_tokens: spec.output_tokens,
                stream: true,
                stream_options,
                temperature: sampling.temperature,
                top_p: sampling.top_p,
                ignore_eos: sampling.ignore_eos,
            }),
        };
        let mut value = value.unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.extend(config.structured_output.body_fields());
            for (key, extra) in &sampling.extra_body {
                object.insert(key.clone(), extra.clone());
            }
        }
        serde_json::to_vec(&value).unwrap_or_default()
    }
}

/// A send's outcome under the deadline: the response, or the failure.
fn response_or_failure(
    sent: Result<reqwest::Result<reqwest::Response>, tokio::time::error::Elapsed>,
) -> Result<reqwest::Response, Failure> {
    match sent {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(error)) => Err(transport_failure(error)),
        Err(_) => Err(timed_out()),
    }
}

fn cancelled(delay: std::time::Duration) -> Failure {
    let message = format!(
        "cancelled by the client {:.3} s after it was sent (--request-cancellation-rate)",
        delay.as_secs_f64()
    );
    (ErrorKind::Cancelled, message)
}

fn timed_out() -> Failure {
    (ErrorKind::Timeout, "the request timed out".to_string())
}

/// Checks the status, reads the stream into `parser`; `Ok(when [DONE] arrived)`.
async fn read_response(
    mut response: reqwest::Response,
    deadline: tokio::time::Instant,
    clock: RunClock,
    parser: &mut StreamParser,
) -> Result<Instant, Failure> {
    let status = response.status();
    if !status.is_success() {
        let body = read_error_body(&mut response, deadline).await;
        let message = error_body_message(&body).unwrap_or_else(|| clip(&body));
        return Err((ErrorKind::Http(status.as_u16()), message));
    }
    if is_json(&response) {
        return read_whole_response(response, deadline, clock, parser).await;
    }
    loop {
        let read = timeout_at(deadline, response.chunk())
            .await
            .map_err(|_| timed_out())?
            .map_err(transport_failure)?;
        let now = Instant::now();
        let flow = match read {
            Some(bytes) => parser.push(&bytes, clock.secs(now)),
            None => parser.end_of_body(clock.secs(now)),
        };
        match flow {
            Flow::Continue => continue,
            Flow::Done => {
                drain(&mut response, deadline).await;
                return Ok(now);
            }
            Flow::Failed(message) => return Err((ErrorKind::Stream, message)),
        }
    }
}

/// A server that answered one JSON body instead of a stream (some do for tool calls): the body
/// is read whole and its content recorded as arriving when the body ended.
async fn read_whole_response(
    response: reqwest::Response,
    deadline: tokio::time::Instant,
    clock: RunClock,
    parser: &mut StreamParser,
) -> Result<Instant, Failure> {
    let body = timeout_at(deadline, response.bytes())
        .await
        .map_err(|_| timed_out())?
        .map_err(transport_failure)?;
    let now = Instant::now();
    match parser.whole_response(&String::from_utf8_lossy(&body), clock.secs(now)) {
        Flow::Failed(message) => Err((ErrorKind::Stream, message)),
        Flow::Continue | Flow::Done => Ok(now),
    }
}

/// Reads what follows `[DONE]` (the chunked body's terminator), so the connection goes back to
/// the pool instead of being closed; gives up after `MAX_DRAIN` (a server that keeps the stream
/// open after `[DONE]` must not hold a concurrency slot).
async fn drain(response: &mut reqwest::Response, deadline: tokio::time::Instant) {
    let deadline = deadline.min(tokio::time::Instant::now() + MAX_DRAIN);
    while let Ok(Ok(Some(_))) = timeout_at(deadline, response.chunk()).await {}
}

async fn read_error_body(
    response: &mut reqwest::Response,
    deadline: tokio::time::Instant,
) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A transport error: the connection could not be made, or broke.
fn transport_failure(error: reqwest::Error) -> Failure {
    let kind = if error.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Connection
    };
    (kind, error_chain(&error))
}

/// An error and its sources, `: `-joined (reqwest's own message is only "error sending request").
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod retry_tests;

#[cfg(test)]
#[path = "structured_request_tests.rs"]
mod structured_request_tests;

#[cfg(test)]
#[path = "model_tests.rs"]
mod model_tests;
