//! What flows back to a caller: the prompt's log-probabilities when asked for, one event per
//! generated token, then one final event.

use std::time::Instant;

use crate::error::EngineError;

/// Why a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// An EOS token (`stop_token_id: None` when it was the model's EOS) or a stop token id.
    Stop { stop_token_id: Option<u32> },
    /// `max_tokens` or `max_model_len` reached.
    Length,
    /// Aborted by the caller (or its stream was dropped) or by shutdown.
    Abort,
    /// The output ended with a repeated pattern (`StopConditions::repetition`).
    Repetition,
}

impl FinishReason {
    /// The OpenAI spelling: "stop", "length" or "abort" (vLLM's "repetition" too).
    pub fn as_str(&self) -> &'static str {
        match self {
            FinishReason::Stop { .. } => "stop",
            FinishReason::Length => "length",
            FinishReason::Abort => "abort",
            FinishReason::Repetition => "repetition",
        }
    }
}

/// Token counts of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Prompt tokens served from the prefix cache.
    pub num_cached_tokens: usize,
    /// What speculative decoding proposed and kept for it (`None`: the engine does not
    /// speculate).
    pub spec_decode: Option<SpecDecodeUsage>,
}

/// One request's speculative decoding: proposed tokens the target model verified, and those it
/// accepted (each accepted one is also a completion token; the rejected ones cost a row each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpecDecodeUsage {
    pub num_draft_tokens: usize,
    pub num_accepted_tokens: usize,
}

/// Monotonic timestamps of one request's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimings {
    pub queued: Instant,
    pub first_scheduled: Option<Instant>,
    pub first_token: Option<Instant>,
    pub finished: Instant,
    pub num_preemptions: u32,
}

/// One generated token with its log-probabilities (when asked for).
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedToken {
    pub token_id: u32,
    pub logprob: Option<f32>,
    /// The most likely alternatives, best first, when `logprobs` asked for some.
    pub top_logprobs: Vec<(u32, f32)>,
    pub at: Instant,
    /// The sequence ends with this token: its `Finished` event follows (stop token, EOS,
    /// `max_tokens`, the context limit or a complete grammar).
    pub is_last: bool,
}

/// The log-probability of one prompt token given the tokens before it (the request's
/// `prompt_logprobs`), from the model's raw logits.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptTokenLogprob {
    pub token_id: u32,
    pub logprob: f32,
    /// 1 for the most likely token: one more than the number of tokens more likely than it.
    pub rank: u32,
    /// The most likely alternatives, best first (`prompt_logprobs` of them).
    pub top_logprobs: Vec<(u32, f32)>,
}

/// One event on a request's stream.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenEvent {
    /// Before the first token when the request asked for `prompt_logprobs`: one entry per prompt
    /// token after the first, in order.
    PromptLogprobs(Vec<PromptTokenLogprob>),
    Token(GeneratedToken),
    Finished {
        reason: FinishReason,
        usage: Usage,
        timings: RequestTimings,
    },
    Error(EngineError),
}
