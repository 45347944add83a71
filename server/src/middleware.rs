//! Layers every request goes through: `x-request-id` (honoured or generated, echoed, logged),
//! the API key check, and the HTTP metrics.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use rand::Rng;
use tracing::Instrument;

use crate::openai::error::ApiError;
use crate::state::SharedState;
use crate::timeline::ReceivedAt;

pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest client-given request id kept; longer or non-printable ones are replaced.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// The request's id, in its extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestIdValue(pub String);

impl RequestIdValue {
    pub fn generate() -> Self {
        Self(format!("{:032x}", rand::rng().random::<u128>()))
    }

    /// The id as response ids such as `chatcmpl-…` carry it (as vLLM's do): letters, digits,
    /// `-`, `_` and `.` kept (so a UUID stays whole), anything else dropped.
    pub fn compact(&self) -> String {
        self.0
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect()
    }

    fn from_header(value: Option<&HeaderValue>) -> Option<Self> {
        let text = value?.to_str().ok()?;
        let usable = !text.is_empty()
            && text.len() <= MAX_REQUEST_ID_LEN
            && text.chars().all(|c| c.is_ascii_graphic());
        usable.then(|| Self(text.to_string()))
    }
}

/// Honours the client's `x-request-id` (or makes one), runs the request inside a span carrying
/// it, and echoes it on the response. Also notes when the request arrived ([`ReceivedAt`]).
pub async fn request_id(mut request: Request, next: Next) -> Response {
    let received = ReceivedAt(std::time::Instant::now());
    request.extensions_mut().insert(received);
    let id = RequestIdValue::from_header(request.headers().get(REQUEST_ID_HEADER))
        .unwrap_or_else(RequestIdValue::generate);
    request.extensions_mut().insert(id.clone());
    let span = tracing::info_span!("http", request_id = %id.0);
    let mut response = next.run(request).instrument(span).await;
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// Constant-time equality: the time taken does not depend on where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = (a.len() != b.len()) as u8;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        difference |= x ^ y;
    }
    difference == 0
}

/// With `--api-key`, requires `Authorization: Bearer <key>` (or `x-api-key: <key>`).
pub async fn require_api_key(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.api_key.as_deref() else {
        return next.run(request).await;
    };
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
    let given = bearer.or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
    match given {
        Some(key) if constant_time_eq(key.trim().as_bytes(), expected.as_bytes()) => {
            next.run(request).await
        }
        _ => ApiError::unauthorized().into_response(),
    }
}

/// Counts requests and their durations by route template (never by raw path). The duration runs
/// until the response body is sent in full (or dropped), so a stream counts its whole length.
pub async fn http_metrics(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    let handler = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| crate::metrics::UNMATCHED_HANDLER.to_string());
    let method = request.method().as_str().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    let record = RecordOnDrop {
        state,
        handler,
        method,
        status: response.status().as_u16(),
        started,
    };
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _keep_until_the_body_ends = &record;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Records one HTTP request when its response body is done with.
struct RecordOnDrop {
    state: SharedState,
    handler: String,
    method: String,
    status: u16,
    started: Instant,
}

impl Drop for RecordOnDrop {
    fn drop(&mut self) {
        self.state.metrics.record_http(
            &self.handler,
            &self.method,
            self.status,
            self.started.elapsed(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_whole_inputs() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn request_ids_are_kept_when_sane_and_replaced_otherwise() {
        let keep = HeaderValue::from_static("abc-123");
        assert_eq!(
            RequestIdValue::from_header(Some(&keep)).map(|v| v.0),
            Some("abc-123".into())
        );
        let spaced = HeaderValue::from_static("a b");
        assert!(RequestIdValue::from_header(Some(&spaced)).is_none());
        let long = HeaderValue::from_str(&"x".repeat(200)).expect("header");
        assert!(RequestIdValue::from_header(Some(&long)).is_none());
        assert_eq!(RequestIdValue::generate().0.len(), 32);
        assert_eq!(RequestIdValue("a-b_c.d".into()).compact(), "a-b_c.d");
        assert_eq!(RequestIdValue("a/b\"c{}".into()).compact(), "abc");
    }
}
