//! The OpenAI-compatible API: request parsing and checks, choices, response shapes, streaming.

pub mod admission;
pub mod bad_words;
pub mod chat;
pub mod chat_format;
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
pub mod output_spec;
pub mod params;
pub mod path_param;
pub mod prompt_side;
pub mod prompt_truncation;
pub mod requests;
pub mod respond;
pub mod responses;
pub mod sagemaker;
pub mod stop_reason;
pub mod template_variables;
pub mod thinking_budget;
pub mod tokenize;
pub mod tool_output;
pub mod tools;
pub mod unsupported_fields;
pub mod usage;
pub mod wire;

use crate::state::AppState;
use error::ApiError;
use params::GenerationParams;

/// Runs tokenizer or template work off the async threads (prompts may be megabytes long).
pub async fn tokenize_blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(format!("tokenizer task failed: {e}")))?
}

/// Records an accepted generation request: its parameters in the metrics, and one log line
/// (unless `--disable-log-requests`).
pub fn record_accepted(
    state: &AppState,
    endpoint: &str,
    num_prompt_tokens: usize,
    params: &GenerationParams,
) {
    let model = state.response_model_name(params);
    state.metrics.for_model(model).record_request_params(
        params.n,
        params
            .stop
            .max_tokens
            .unwrap_or(state.engine.info().max_model_len),
    );
    if state.log_requests {
        tracing::info!(
            endpoint,
            model,
            num_prompt_tokens,
            max_tokens = params.stop.max_tokens.map(|n| n as u64),
            n = params.n,
            stream = params.stream,
            temperature = params.sampling.temperature,
            "request accepted"
        );
    }
}
