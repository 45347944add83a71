//! OpenAI-shaped errors: `{"error": {"message", "type", "param", "code"}}` with the right status.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use pagoda_engine::{ConstraintError, EngineError};
use pagoda_text::prompt_side::PromptSideError;
use pagoda_text::template::TemplateError;
use pagoda_text::tokenizer::TokenizerError;

use crate::admission::QueueFull;
use crate::generate::GenerateError;

/// An error as the API returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// The request field at fault, when there is one.
    pub param: Option<String>,
    /// Seconds to wait before retrying (429 and 503 answers).
    pub retry_after_s: Option<u64>,
    /// OpenAI's `code`, when it is not the one the status implies.
    pub code: Option<&'static str>,
}

/// OpenAI's error body, for every 4xx and 5xx (and an error event inside a stream).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail<'a> {
    message: &'a str,
    /// `invalid_request_error`, `authentication_error`, `not_found_error`, ...
    #[serde(rename = "type")]
    kind: &'static str,
    /// The request field at fault, when one is.
    param: Option<&'a str>,
    /// e.g. `context_length_exceeded`, `model_not_found`, `invalid_api_key`.
    code: Option<&'static str>,
}

/// The error answers every route documents (`/openapi.json`): OpenAI's error body.
#[derive(Debug, utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum ErrorResponses<'a> {
    /// OpenAI-style error naming what is wrong.
    #[response(status = "4XX")]
    Client(ErrorBody<'a>),
    /// OpenAI-style error.
    #[response(status = "5XX")]
    Server(ErrorBody<'a>),
}

/// OpenAI's `code` for a prompt (plus `max_tokens`) longer than the model or cache allows.
pub const CONTEXT_LENGTH_EXCEEDED: &str = "context_length_exceeded";

/// The `code` of a request whose grammar proved too complex for the matcher while generating
/// (a 400, like a grammar refused when it was compiled).
pub const GRAMMAR_TOO_COMPLEX: &str = "grammar_too_complex";

impl ApiError {
    /// A too-long request names the prompt field of its endpoint (`messages` or `prompt`).
    pub fn naming_prompt(mut self, field: &str) -> Self {
        if self.code == Some(CONTEXT_LENGTH_EXCEEDED) && self.param.is_none() {
            self.param = Some(field.to_string());
        }
        self
    }

    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            param: None,
            retry_after_s: None,
            code: None,
        }
    }

    /// 400 naming the request field at fault.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            param: Some(param.into()),
            ..Self::new(StatusCode::BAD_REQUEST, message)
        }
    }

    /// 400 for a field whose feature is not offered.
    pub fn unsupported(param: &str, what: &str) -> Self {
        Self::invalid(
            param,
            format!("`{param}`: {what} is not supported by this server"),
        )
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "invalid or missing API key: send it as `Authorization: Bearer <key>`",
        )
    }

    pub fn queue_full(max_waiting_requests: usize) -> Self {
        Self {
            retry_after_s: Some(1),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "the server is overloaded: {max_waiting_requests} requests are already waiting; retry later"
                ),
            )
        }
    }

    pub fn shutting_down() -> Self {
        Self {
            retry_after_s: Some(5),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down and accepts no new requests",
            )
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// OpenAI's `type` for this status.
    pub fn kind(&self) -> &'static str {
        match self.status.as_u16() {
            400 | 405 | 408 | 413 | 415 | 422 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            503 => "service_unavailable_error",
            _ => "server_error",
        }
    }

    fn code(&self) -> Option<&'static str> {
        if self.code.is_some() {
            return self.code;
        }
        match self.status.as_u16() {
            401 => Some("invalid_api_key"),
            404 => Some("not_found"),
            408 => Some("request_timeout"),
            413 => Some("request_too_large"),
            415 => Some("unsupported_media_type"),
            429 => Some("queue_full"),
            503 => Some("shutting_down"),
            _ => None,
        }
    }

    /// The JSON body, also used for error events inside a stream.
    pub fn to_json(&self) -> String {
        let body = ErrorBody {
            error: ErrorDetail {
                message: &self.message,
                kind: self.kind(),
                param: self.param.as_deref(),
                code: self.code(),
            },
        };
        serde_json::to_string(&body).unwrap_or_else(|_| String::from("{\"error\":{}}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.to_json()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.retry_after_s {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        match &error {
            EngineError::InvalidRequest { field, .. } => {
                ApiError::invalid(*field, error.to_string())
            }
            EngineError::RequestTooLarge(_) => ApiError {
                code: Some(CONTEXT_LENGTH_EXCEEDED),
                ..ApiError::new(StatusCode::BAD_REQUEST, error.to_string())
            },
            EngineError::ShutDown => ApiError::shutting_down(),
            // The request's grammar needs more work per token than the matcher allows: the
            // client's to simplify, as a grammar refused at compile time would be.
            EngineError::Constraint(ConstraintError::TooComplex(_)) => ApiError {
                code: Some(GRAMMAR_TOO_COMPLEX),
                ..ApiError::new(StatusCode::BAD_REQUEST, error.to_string())
            },
            _ => ApiError::internal(error.to_string()),
        }
    }
}

impl From<TokenizerError> for ApiError {
    fn from(error: TokenizerError) -> Self {
        ApiError::internal(format!("tokenizer: {error}"))
    }
}

impl From<TemplateError> for ApiError {
    fn from(error: TemplateError) -> Self {
        match error {
            TemplateError::UnsupportedContent(_) => {
                ApiError::invalid("messages", error.to_string())
            }
            _ => ApiError::invalid(
                "messages",
                format!("the chat template rejected the messages: {error}"),
            ),
        }
    }
}

impl From<GenerateError> for ApiError {
    fn from(error: GenerateError) -> Self {
        match error {
            GenerateError::Engine(e) => e.into(),
            GenerateError::Template(e) => e.into(),
            GenerateError::Tokenizer(e) => e.into(),
            GenerateError::PromptSide(PromptSideError::Tokenizer(e)) => e.into(),
            GenerateError::PromptSide(PromptSideError::Template(e)) => e.into(),
            GenerateError::PromptSide(_) => ApiError::internal(error.to_string()),
        }
    }
}

impl From<QueueFull> for ApiError {
    fn from(full: QueueFull) -> Self {
        ApiError::queue_full(full.max_waiting_requests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_openai_shaped() {
        let error = ApiError::invalid("temperature", "must be >= 0");
        let json: serde_json::Value = serde_json::from_str(&error.to_json()).expect("json");
        assert_eq!(json["error"]["message"], "must be >= 0");
        assert_eq!(json["error"]["type"], "invalid_request_error");
        assert_eq!(json["error"]["param"], "temperature");
        assert!(json["error"]["code"].is_null());
    }

    #[test]
    fn engine_errors_map_to_statuses() {
        let invalid = EngineError::InvalidRequest {
            field: "top_p",
            message: "bad".into(),
        };
        let mapped = ApiError::from(invalid);
        assert_eq!(mapped.status, StatusCode::BAD_REQUEST);
        assert_eq!(mapped.param.as_deref(), Some("top_p"));
        assert_eq!(
            ApiError::from(EngineError::ShutDown).status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            ApiError::from(EngineError::Execution("x".into())).status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        let too_complex = EngineError::Constraint(ConstraintError::TooComplex("items".into()));
        let mapped = ApiError::from(too_complex);
        assert_eq!(mapped.status, StatusCode::BAD_REQUEST);
        assert_eq!(mapped.code, Some(GRAMMAR_TOO_COMPLEX));
        let broken = EngineError::Constraint(ConstraintError::Failed("no token".into()));
        assert_eq!(
            ApiError::from(broken).status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn queue_full_carries_retry_after() {
        let response = ApiError::queue_full(8).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
