//! `POST /v1/chat/completions`.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use serde_json::Value;

use crate::middleware::RequestIdValue;
use crate::openai::constrain::compile_requested;
use crate::openai::error::ApiError;
use crate::openai::format::{ChatFormat, ResponseMeta};
use crate::openai::json_body::JsonBody;
use crate::openai::output_spec::requested_spec;
use crate::openai::params::GenerationParams;
use crate::openai::requests::{parse_body, ChatCompletionRequest};
use crate::openai::usage::UsageTotals;
use crate::openai::{record_accepted, respond, tokenize_blocking};
use crate::state::{unix_now_s, SharedState};

pub async fn chat_completions(
    State(state): State<SharedState>,
    Extension(request_id): Extension<RequestIdValue>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request: ChatCompletionRequest = parse_body(&body)?;
    state.check_model(request.fields.model.as_deref())?;
    reject_unsupported(&request)?;
    if request.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must contain at least one message",
        ));
    }
    let logprobs = match (request.logprobs, request.top_logprobs) {
        (Some(true), top) => Some(top.unwrap_or(0) as usize),
        (_, Some(top)) if top > 0 => {
            return Err(ApiError::invalid(
                "top_logprobs",
                "`top_logprobs` requires `logprobs` to be true",
            ))
        }
        _ => None,
    };
    let mut params = GenerationParams::from_common(&request.common(), logprobs, &state.defaults)?;
    if let Some(requested) = requested_spec(&request.fields, request.response_format.as_ref())? {
        let compiler = state.grammar_compiler.as_deref();
        params.constraint =
            Some(compile_requested(compiler, &state.metrics, &requested, None).await?);
    }
    let add_generation_prompt = request.add_generation_prompt.unwrap_or(true);
    let prompt = {
        let state = state.clone();
        let messages = request.messages;
        tokenize_blocking(move || state.chat_prompt_ids(&messages, add_generation_prompt, false))
            .await?
    };
    let num_prompt_tokens = prompt.len();
    let request = state
        .validate_prompt(prompt, &params)
        .map_err(|e| e.naming_prompt("messages"))?;
    record_accepted(&state, "chat", num_prompt_tokens, &params);
    let runs = state.start_choices(&request, &params, 0, logprobs.is_some())?;
    let meta = ResponseMeta {
        id: format!("chatcmpl-{}", request_id.compact()),
        created_unix_s: unix_now_s(),
        model: state.model_name().to_string(),
        want_logprobs: logprobs.is_some(),
    };
    let totals = UsageTotals::new(vec![num_prompt_tokens], params.n);
    respond::respond(runs, ChatFormat(meta), totals, &params, &state).await
}

fn is_present(value: &Option<Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    }
}

/// Features not offered yet: a clear 400 naming the field.
fn reject_unsupported(request: &ChatCompletionRequest) -> Result<(), ApiError> {
    if is_present(&request.tools) {
        return Err(ApiError::unsupported("tools", "tool calling"));
    }
    if is_present(&request.functions) {
        return Err(ApiError::unsupported("functions", "function calling"));
    }
    let tool_choice_none = |v: &Value| v.is_null() || v.as_str() == Some("none");
    if request
        .tool_choice
        .as_ref()
        .is_some_and(|v| !tool_choice_none(v))
    {
        return Err(ApiError::unsupported("tool_choice", "tool calling"));
    }
    if request
        .function_call
        .as_ref()
        .is_some_and(|v| !tool_choice_none(v))
    {
        return Err(ApiError::unsupported("function_call", "function calling"));
    }
    Ok(())
}
