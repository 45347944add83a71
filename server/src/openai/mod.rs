//! The OpenAI-compatible API, folder by folder along a request's path: the endpoints (`chat`,
//! `completions`, `tokenize`, `sagemaker`, `responses/`), then `request/` (parse → plan),
//! `choices/` (the engine requests and their events), `reply/` (whole or streamed, in each
//! endpoint's shape), `wire/` (the typed bodies written), `tools/` (tools and structured
//! outputs); `error` is what every stage may answer.

pub mod chat;
pub mod choices;
pub mod completions;
pub mod error;
pub mod reply;
pub mod request;
pub mod responses;
pub mod sagemaker;
pub mod tokenize;
pub mod tools;
pub mod wire;

use crate::chat_prompt::Conversation;
use crate::state::AppState;
use error::ApiError;
use request::plan::RequestPlan;

/// Runs tokenizer or template work off the async threads (prompts may be megabytes long).
pub async fn tokenize_blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(format!("tokenizer task failed: {e}")))?
}

/// The prompt ids of a conversation, under the server's chat policy (blocking: call it off the
/// async threads).
pub fn render_chat_prompt(
    state: &AppState,
    conversation: Conversation<'_>,
    add_special_tokens: bool,
) -> Result<Vec<u32>, ApiError> {
    crate::chat_prompt::chat_prompt_ids(
        &state.template,
        &state.tokenizer,
        &state.chat_policy,
        conversation,
        add_special_tokens,
    )
}

/// Records an accepted generation request: its parameters in the metrics, and one log line
/// (unless `--disable-log-requests`).
pub fn record_accepted(
    state: &AppState,
    endpoint: &str,
    num_prompt_tokens: usize,
    plan: &RequestPlan,
) {
    let model = plan.reply.model.as_str();
    let max_tokens = plan.engine.stop.max_tokens;
    let num_choices = plan.engine.n;
    state.metrics.for_model(model).record_request_params(
        num_choices,
        max_tokens.unwrap_or(state.engine.info().max_model_len),
    );
    if state.log_requests {
        tracing::info!(
            endpoint,
            model,
            num_prompt_tokens,
            max_tokens = max_tokens.map(|n| n as u64),
            n = num_choices,
            stream = plan.reply.stream,
            temperature = plan.engine.sampling.temperature,
            "request accepted"
        );
    }
}
