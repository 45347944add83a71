//! The body of a JSON route, read under the server's limits:
//! * `Content-Type` must be `application/json` (parameters allowed) or `application/*+json`:
//!   415 otherwise, so a web page cannot drive the API from a visitor's browser with a "simple"
//!   (unpreflighted) text/plain, form or multipart request;
//! * a declared `Content-Length` over `--max-request-body-bytes` is answered 413 before any of
//!   the body is read; a body that grows past the limit gets 413 too;
//! * a body that does not arrive in full within `--http-body-read-timeout` gets 408.
//!
//! After an early answer the rest of the body is read and thrown away in the background (up to
//! [`HttpLimits::max_drain_bytes`] and the body timeout): a client still sending would otherwise
//! see its connection reset instead of the answer. A client that asked `Expect: 100-continue` is
//! never sent `100 Continue`, so it sends nothing more.

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use crate::http_limits::HttpLimits;
use crate::openai::error::ApiError;
use crate::state::SharedState;

/// A JSON route's body bytes (not parsed yet: see `requests::parse_body`).
#[derive(Debug)]
pub struct JsonBody(pub Bytes);

/// Why a body was not read: the error, and whether the connection must close after it.
#[derive(Debug)]
pub struct BodyRejection {
    error: ApiError,
    close: bool,
}

impl IntoResponse for BodyRejection {
    fn into_response(self) -> Response {
        let mut response = self.error.into_response();
        if self.close {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

impl FromRequest<SharedState> for JsonBody {
    type Rejection = BodyRejection;

    async fn from_request(request: Request, state: &SharedState) -> Result<Self, BodyRejection> {
        let limits = state.http_limits;
        let expects_continue = expects_continue(request.headers());
        let declared = declared_length(request.headers());
        let media_check = check_content_type(request.headers());
        let body = request.into_body();
        if let Err(error) = media_check {
            return Err(answer_early(body, error, expects_continue, &limits));
        }
        if declared.is_some_and(|length| length > limits.max_request_body_bytes as u64) {
            return Err(answer_early(body, too_large(), expects_continue, &limits));
        }
        let capacity = declared.map_or(0, |length| length as usize);
        read_body(body.into_data_stream(), capacity, &limits).await
    }
}

async fn read_body(
    mut stream: BodyDataStream,
    capacity: usize,
    limits: &HttpLimits,
) -> Result<JsonBody, BodyRejection> {
    let deadline = tokio::time::Instant::now() + limits.body_read_timeout;
    let mut bytes = Vec::with_capacity(capacity);
    loop {
        let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_elapsed) => return Err(timed_out(limits)),
            Ok(None) => return Ok(JsonBody(Bytes::from(bytes))),
            Ok(Some(Err(error))) => {
                return Err(BodyRejection {
                    error: ApiError::invalid(
                        "body",
                        format!("cannot read the request body: {error}"),
                    ),
                    close: true,
                })
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        let num_read = bytes.len() + chunk.len();
        if num_read > limits.max_request_body_bytes {
            drain_in_background(stream, num_read, limits);
            return Err(BodyRejection {
                error: too_large(),
                close: false,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// The rejection for a body not read at all; the body is drained unless the client waits for
/// `100 Continue` (then it has sent nothing and is told to send nothing).
fn answer_early(
    body: Body,
    error: ApiError,
    expects_continue: bool,
    limits: &HttpLimits,
) -> BodyRejection {
    if expects_continue {
        return BodyRejection { error, close: true };
    }
    drain_in_background(body.into_data_stream(), 0, limits);
    BodyRejection {
        error,
        close: false,
    }
}

/// Reads and discards the rest of a body, within the drain bound and the body timeout.
fn drain_in_background(mut stream: BodyDataStream, num_read: usize, limits: &HttpLimits) {
    let max_drain_bytes = limits.max_drain_bytes();
    let timeout = limits.body_read_timeout;
    tokio::spawn(async move {
        let drain = async {
            let mut num_drained = num_read;
            while let Some(Ok(chunk)) = stream.next().await {
                num_drained += chunk.len();
                if num_drained > max_drain_bytes {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, drain).await;
    });
}

/// 415 unless the body is declared JSON.
pub fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let value = headers.get(header::CONTENT_TYPE);
    let text = value.and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let is_json = essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"));
    if is_json {
        return Ok(());
    }
    let got = match value {
        None => "no Content-Type".to_string(),
        Some(_) => format!("Content-Type {text:?}"),
    };
    Err(ApiError {
        param: Some("Content-Type".into()),
        ..ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the request body must be JSON sent as `Content-Type: application/json` (got {got})"),
        )
    })
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"))
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "the request body is larger than the server accepts (--max-request-body-bytes)",
    )
}

fn timed_out(limits: &HttpLimits) -> BodyRejection {
    BodyRejection {
        error: ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s (--http-body-read-timeout)",
                limits.body_read_timeout.as_secs_f64()
            ),
        ),
        close: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content_type(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(value).expect("ascii"),
        );
        headers
    }

    #[test]
    fn json_media_types_pass_and_others_get_415() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/vnd.api+json",
        ] {
            assert!(check_content_type(&content_type(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/json",
            "",
        ] {
            let error = check_content_type(&content_type(bad)).expect_err(bad);
            assert_eq!(error.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{bad}");
        }
        let missing = check_content_type(&HeaderMap::new()).expect_err("no header");
        assert!(
            missing.message.contains("no Content-Type"),
            "{}",
            missing.message
        );
    }

    #[test]
    fn lengths_and_expectations_are_read_from_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(declared_length(&headers), None);
        headers.insert(
            header::CONTENT_LENGTH,
            HeaderValue::from_static("1000000000"),
        );
        assert_eq!(declared_length(&headers), Some(1_000_000_000));
        assert!(!expects_continue(&headers));
        headers.insert(header::EXPECT, HeaderValue::from_static("100-Continue"));
        assert!(expects_continue(&headers));
    }
}
