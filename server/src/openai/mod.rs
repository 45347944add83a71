//! The OpenAI-compatible API: request parsing and checks, choices, response shapes, streaming.

pub mod admission;
pub mod bad_words;
pub mod chat;
pub mod chat_format;
pub mod chat_plan;
pub mod choice;
pub mod choice_context;
pub mod choice_event;
pub mod choice_events;
pub mod collect;
pub mod completion_format;
pub mod completions;
pub mod constrain;
pub mod delta_batching;
pub mod error;
pub mod format;
pub mod json_body;
pub mod legacy_functions;
pub mod logit_bias;
pub mod logprob;
pub mod model_select;
pub mod output_spec;
pub mod params;
pub mod path_param;
pub mod plan;
pub mod prompt_side;
pub mod prompt_truncation;
pub mod requests;
pub mod respond;
pub mod responses;
pub mod sagemaker;
pub mod start_choices;
pub mod stop_reason;
pub mod template_variables;
pub mod thinking_budget;
pub mod tokenize;
pub mod tool_output;
pub mod tools;
pub mod unsupported_fields;
pub mod usage;
pub mod wire;

use crate::chat_prompt::Conversation;
use crate::state::AppState;
use error::ApiError;
use plan::RequestPlan;

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
pub fn chat_prompt_ids(
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
