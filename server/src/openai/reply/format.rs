//! The JSON shapes of responses that every endpoint shares: the trait, the envelope, a finished
//! choice (chat's own shape is `chat_format.rs`, completions' `completion_format.rs`).

use std::sync::Arc;

use serde::Serialize;

use crate::openai::wire::prompt_logprobs::PromptLogprobs;
use crate::openai::wire::usage::{CompletionTokensDetails, Usage};
use crate::openai::wire::Nullable;

use crate::openai::choices::logprob::TokenLogprob;
use crate::openai::choices::stop_reason::StopReason;
use crate::openai::request::plan::RequestPlan;
use crate::unix_time::unix_now_s;

/// How one endpoint writes its objects, as typed bodies (`wire/`).
pub trait ResponseFormat: Send + Sync + 'static {
    /// A choice of a streamed chunk.
    type StreamChoice: Serialize + Send + 'static;
    /// A streamed chunk.
    type Chunk: Serialize + Send + 'static;
    /// The whole non-streamed response.
    type Whole: Serialize + Send + 'static;
    /// A streamed chunk with the given choices (`choices` may be empty for the usage chunk);
    /// `usage` absent, `null`, or a count.
    fn chunk(&self, choices: Vec<Self::StreamChoice>, usage: Nullable<Usage>) -> Self::Chunk;
    /// The opening chunk of a choice (chat: the role, and vLLM's `prompt_token_ids` when
    /// asked), if the endpoint has one.
    fn opening_chunk(
        &self,
        index: usize,
        prompt_token_ids: Option<&[u32]>,
        usage: Nullable<Usage>,
    ) -> Option<Self::Chunk>;
    /// The streamed choice a delta becomes (`None`: nothing to send yet); with `end`, the
    /// choice's last delta, which carries its finish (see `joins_last_delta`).
    fn delta_choice(
        &self,
        delta: DeltaParts<'_>,
        end: Option<&ChoiceEnd>,
    ) -> Option<Self::StreamChoice>;
    fn final_choice(&self, index: usize, end: &ChoiceEnd) -> Self::StreamChoice;
    /// Whether a choice's last delta carries its finish reason (one chunk, as vLLM's server
    /// writes it), instead of a delta, then a final choice of its own. A separate empty final
    /// chunk would count as one more token for a client that times every chunk (vLLM's, on
    /// completions).
    fn joins_last_delta(&self) -> bool {
        true
    }
    /// The whole non-streamed response.
    fn response(&self, choices: Vec<FinishedChoice>, usage: Usage) -> Self::Whole;
    /// Reads a delta that will not be streamed (a whole response's), for what the format
    /// counts of it (chat: reasoning tokens).
    fn observe(&self, _delta: DeltaParts<'_>) {}
    /// What the format counted of the completion (chat with a reasoning parser:
    /// `reasoning_tokens`).
    fn completion_tokens_details(&self) -> Option<CompletionTokensDetails> {
        None
    }
    /// `usage` with the format's completion details beside its own (speculation's).
    fn with_details(&self, usage: Usage) -> Usage {
        let details = self
            .completion_tokens_details()
            .unwrap_or_default()
            .merged(usage.completion_tokens_details);
        Usage {
            completion_tokens_details: details,
            ..usage
        }
    }
}

/// How a streamed choice ended: its finish reason and vLLM's `stop_reason`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceEnd {
    pub finish_reason: &'static str,
    pub stop_reason: Option<StopReason>,
}

/// What one streamed delta of a choice writes.
#[derive(Debug, Clone, Copy)]
pub struct DeltaParts<'a> {
    pub index: usize,
    pub text: &'a str,
    pub logprobs: &'a [TokenLogprob],
    /// How many generated tokens the delta stands for.
    pub num_tokens: usize,
    /// The generated tokens the delta stands for (when `return_token_ids` asked).
    pub token_ids: &'a [u32],
    /// The prompt's token ids, on a choice's first delta when `return_token_ids` asked.
    pub prompt_token_ids: Option<&'a [u32]>,
}

/// A choice of a non-streamed response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FinishedChoice {
    pub index: usize,
    pub text: String,
    pub finish_reason: String,
    /// vLLM's `stop_reason`.
    pub stop_reason: Option<StopReason>,
    pub logprobs: Vec<TokenLogprob>,
    /// vLLM's `prompt_logprobs`, when asked for.
    pub prompt_logprobs: Option<PromptLogprobs>,
    /// The generated token ids.
    pub token_ids: Vec<u32>,
    /// The prompt's token ids, when `return_token_ids` asked for them.
    pub prompt_token_ids: Option<Arc<[u32]>>,
}

/// The response identity shared by every chunk of one response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseMeta {
    pub id: String,
    pub created_unix_s: u64,
    pub model: String,
    pub want_logprobs: bool,
    /// vLLM's `return_token_ids`: choices carry `token_ids`.
    pub return_token_ids: bool,
}

impl ResponseMeta {
    /// The identity of response `id` of a request with this plan, created now.
    pub fn new(id: String, plan: &RequestPlan) -> Self {
        Self {
            id,
            created_unix_s: unix_now_s(),
            model: plan.reply.model.clone(),
            want_logprobs: plan.logprobs().is_some(),
            return_token_ids: plan.reply.return_generated_token_ids,
        }
    }

    /// A choice's `token_ids` field: the ids when `return_token_ids` asked, else absent.
    pub(crate) fn token_ids(&self, token_ids: &[u32]) -> Option<Vec<u32>> {
        self.return_token_ids.then(|| token_ids.to_vec())
    }
}
