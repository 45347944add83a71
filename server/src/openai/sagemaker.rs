//! Amazon SageMaker's container contract, as vLLM serves it: `GET`/`POST /ping` answers as
//! `/health` does (in `routes.rs`), and `POST /invocations` runs a chat, completion or Responses
//! request, told apart by the body's shape: `messages` → chat, `prompt` → completions, `input` →
//! Responses. Everything else about the request (its fields, errors, streaming) is that route's.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::middleware::RequestIdValue;
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::request::json_body::JsonBody;
use crate::openai::request::parse::parse_body;
use crate::openai::responses::api_state::ResponsesState;
use crate::openai::{chat, completions, responses};
use crate::state::SharedState;
use crate::timeline::ReceivedAt;

/// Which route an invocation's body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InvocationKind {
    Chat,
    Completion,
    Responses,
}

/// The keys that tell the kinds apart (their values are the route's to read).
#[derive(Deserialize)]
struct Shape {
    messages: Option<IgnoredAny>,
    prompt: Option<IgnoredAny>,
    input: Option<IgnoredAny>,
}

fn invocation_kind(body: &[u8]) -> Result<InvocationKind, ApiError> {
    let shape: Shape = parse_body(body)?;
    match (shape.messages, shape.prompt, shape.input) {
        (Some(_), None, None) => Ok(InvocationKind::Chat),
        (None, Some(_), None) => Ok(InvocationKind::Completion),
        (None, None, Some(_)) => Ok(InvocationKind::Responses),
        _ => Err(ApiError::invalid(
            "messages",
            "an invocation gives one of `messages` (chat completions), `prompt` (completions) \
             or `input` (Responses)",
        )),
    }
}

/// `POST /invocations`.
#[utoipa::path(
    post,
    path = "/invocations",
    tag = "SageMaker",
    summary = "Amazon SageMaker's inference route: chat (messages), completion (prompt) or Responses (input)",
    request_body = Object,
    responses(
        (status = 200, description = "As the matching route answers", content((Object = "application/json"), (String = "text/event-stream"))),
        ErrorResponses,
    )
)]
pub async fn invocations(
    State(state): State<SharedState>,
    responses_state: Extension<ResponsesState>,
    Extension(request_id): Extension<RequestIdValue>,
    received: Option<Extension<ReceivedAt>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let (state, id, body) = (State(state), Extension(request_id), JsonBody(body));
    match invocation_kind(&body.0)? {
        InvocationKind::Chat => chat::chat_completions(state, id, received, body).await,
        InvocationKind::Completion => completions::completions(state, id, received, body).await,
        InvocationKind::Responses => {
            responses::create_response(state, responses_state, id, body).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_s_shape_picks_the_route() {
        let kind = |body: &str| invocation_kind(body.as_bytes());
        assert_eq!(
            kind(r#"{"messages": [{"role": "user", "content": "hi"}]}"#).expect("chat"),
            InvocationKind::Chat
        );
        assert_eq!(
            kind(r#"{"prompt": "hi", "max_tokens": 3}"#).expect("completion"),
            InvocationKind::Completion
        );
        assert_eq!(
            kind(r#"{"input": "hi"}"#).expect("responses"),
            InvocationKind::Responses
        );
        for unclear in [r#"{"max_tokens": 3}"#, r#"{"prompt": "a", "messages": []}"#] {
            let error = kind(unclear).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some("messages"), "{unclear}");
        }
        assert!(kind("not json").is_err());
    }
}
