//! `POST /tokenize` and `POST /detokenize` (as vLLM): the model's tokenizer over HTTP.

use axum::extract::State;
use axum::Json;
use pagoda_text::template::ChatMessage;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::chat_prompt::{prompt_ending, Conversation};
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::request::json_body::JsonBody;
use crate::openai::request::model_select::check_model;
use crate::openai::request::parse::parse_body;
use crate::openai::request::template_variables::request_template_kwargs;
use crate::openai::wire::tokenize::{DetokenizeResponse, TokenizeResponse};
use crate::openai::{render_chat_prompt, tokenize_blocking};
use crate::state::SharedState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenizeRequest {
    model: Option<String>,
    prompt: Option<String>,
    #[schema(value_type = Option<Vec<Object>>)]
    messages: Option<Vec<ChatMessage>>,
    add_special_tokens: Option<bool>,
    add_generation_prompt: Option<bool>,
    continue_final_message: Option<bool>,
    chat_template_kwargs: Option<Value>,
    /// As on chat: template variables (see `template_variables`).
    reasoning_effort: Option<Value>,
    documents: Option<Value>,
    /// The tools a chat request offers (OpenAI tool objects), rendered by the template as the
    /// chat endpoint renders them, so the count is the prompt's.
    tools: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct DetokenizeRequest {
    model: Option<String>,
    tokens: Vec<u32>,
}

/// Text (`prompt`) or a conversation (`messages`, through the chat template) → token ids.
#[utoipa::path(
    post,
    path = "/tokenize",
    tag = "vLLM",
    summary = "Text or a conversation to token ids",
    request_body = TokenizeRequest,
    responses(
        (status = 200, description = "The token ids", body = TokenizeResponse),
        ErrorResponses,
    )
)]
pub async fn tokenize(
    State(state): State<SharedState>,
    JsonBody(body): JsonBody,
) -> Result<Json<TokenizeResponse>, ApiError> {
    let request: TokenizeRequest = parse_body(&body)?;
    check_model(&state, request.model.as_deref())?;
    let tokens = {
        let state = state.clone();
        tokenize_blocking(move || match (request.prompt, request.messages) {
            (Some(prompt), None) => Ok(state
                .tokenizer
                .encode(&prompt, request.add_special_tokens.unwrap_or(true))?),
            (None, Some(messages)) => {
                let (add_generation_prompt, continue_final_message) = prompt_ending(
                    request.add_generation_prompt,
                    request.continue_final_message,
                )?;
                let add_special_tokens = request.add_special_tokens.unwrap_or(false);
                let kwargs = request_template_kwargs(
                    request.chat_template_kwargs.as_ref(),
                    request.reasoning_effort.as_ref(),
                    request.documents.as_ref(),
                )?;
                let conversation = Conversation {
                    messages: &messages,
                    tools: request.tools.as_deref(),
                    add_generation_prompt,
                    continue_final_message,
                    template_kwargs: &kwargs,
                };
                render_chat_prompt(&state, conversation, add_special_tokens)
            }
            _ => Err(ApiError::invalid(
                "prompt",
                "give exactly one of `prompt` (text) or `messages` (a conversation)",
            )),
        })
        .await?
    };
    Ok(Json(TokenizeResponse {
        count: tokens.len(),
        max_model_len: state.engine.info().max_model_len,
        tokens,
    }))
}

/// Token ids → text.
#[utoipa::path(
    post,
    path = "/detokenize",
    tag = "vLLM",
    summary = "Token ids to text",
    request_body = DetokenizeRequest,
    responses(
        (status = 200, description = "The text", body = DetokenizeResponse),
        ErrorResponses,
    )
)]
pub async fn detokenize(
    State(state): State<SharedState>,
    JsonBody(body): JsonBody,
) -> Result<Json<DetokenizeResponse>, ApiError> {
    let request: DetokenizeRequest = parse_body(&body)?;
    check_model(&state, request.model.as_deref())?;
    let vocab_size = state.engine.info().model.vocab_size;
    if let Some(bad) = request.tokens.iter().find(|&&id| id as usize >= vocab_size) {
        return Err(ApiError::invalid(
            "tokens",
            format!("token id {bad} is outside the vocabulary (size {vocab_size})"),
        ));
    }
    let text = state.tokenizer.decode(&request.tokens, false)?;
    Ok(Json(DetokenizeResponse { prompt: text }))
}
