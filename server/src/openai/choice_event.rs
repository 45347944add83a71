//! What a choice produces, in order: token deltas, then one finish (or one error), with the
//! prompt log-probabilities before them when asked for.

use std::sync::Arc;

use pagoda_engine::{RequestTimings, Usage};
use serde_json::Value;

use crate::openai::error::ApiError;
use crate::openai::logprob::TokenLogprob;
use crate::openai::stop_reason::StopReason;

/// What a choice produces, in order: deltas, then one `Finished` (or one `Error`).
#[derive(Debug, Clone, PartialEq)]
pub enum ChoiceEvent {
    Delta {
        index: usize,
        text: String,
        logprobs: Vec<TokenLogprob>,
        /// Generated tokens it stands for: 1 for a token's delta, 0 for the echoed prompt or
        /// text flushed at the end.
        num_tokens: usize,
        /// The engine ended the choice with this token: `Finished` comes next.
        is_last: bool,
        /// The generated tokens it stands for (vLLM's `token_ids`, when asked for).
        token_ids: Vec<u32>,
        /// The prompt's token ids, on the choice's first delta when `return_token_ids` asked.
        prompt_token_ids: Option<Arc<[u32]>>,
    },
    Finished {
        index: usize,
        finish_reason: &'static str,
        /// vLLM's `stop_reason` (`None`: `null`).
        stop_reason: Option<StopReason>,
        usage: Usage,
        /// The engine's times for this choice (for `--request-timeline`).
        timings: RequestTimings,
    },
    Error {
        index: usize,
        error: ApiError,
    },
    /// vLLM's `prompt_logprobs` of the choice's prompt (before its first delta).
    PromptLogprobs {
        index: usize,
        logprobs: Value,
    },
}
