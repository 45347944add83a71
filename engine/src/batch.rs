//! What crosses the scheduler ↔ runner seam: a plan goes down, tokens (and the prompt
//! log-probabilities asked for) come up.

use std::sync::Arc;

use crate::kv::BlockId;
use crate::lora::adapter::LoraAdapter;
pub use crate::prompt_logprobs::PromptLogprobRows;
use crate::request::RequestId;

/// One sequence's share of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledSeq {
    pub id: RequestId,
    /// Tokens already in the KV cache; the new tokens sit at positions from here on.
    pub num_computed_tokens: usize,
    /// Token ids computed this step (a prefill chunk, or the one token of a decode), then the
    /// `num_draft_tokens` proposed tokens the step verifies.
    pub new_token_ids: Vec<u32>,
    /// Proposed tokens at the end of `new_token_ids` (speculative decoding; 0 otherwise). Only a
    /// sequence that samples has them; each is one more logits row of the sequence.
    pub num_draft_tokens: usize,
    pub block_table: Vec<BlockId>,
    /// Whether this step reaches the end of the sequence, so a next token is sampled.
    pub sample: bool,
    /// The LoRA adapter the sequence runs with (`None`: the base model).
    pub lora: Option<Arc<LoraAdapter>>,
    /// Rows of this step whose log-probabilities of the next prompt token are returned (the
    /// request's `prompt_logprobs`).
    pub prompt_logprobs: Option<PromptLogprobRows>,
}

impl ScheduledSeq {
    /// Context length once this step is done.
    pub fn num_tokens_after_step(&self) -> usize {
        self.num_computed_tokens + self.new_token_ids.len()
    }

    /// The proposed tokens this step verifies (empty without speculation).
    pub fn draft_token_ids(&self) -> &[u32] {
        &self.new_token_ids[self.new_token_ids.len() - self.num_draft_tokens..]
    }

    /// The sequence's own tokens this step computes: a prefill chunk or a decode token, without
    /// the proposals after them.
    pub fn token_ids_without_drafts(&self) -> &[u32] {
        &self.new_token_ids[..self.new_token_ids.len() - self.num_draft_tokens]
    }

    /// Logits rows the sequence samples from: the last token's and one per proposed token.
    pub fn num_sampling_rows(&self) -> usize {
        match self.sample {
            true => 1 + self.num_draft_tokens,
            false => 0,
        }
    }
}

/// One step's work.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchPlan {
    pub seqs: Vec<ScheduledSeq>,
    pub num_batched_tokens: usize,
}

impl BatchPlan {
    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// Number of sequences that sample a token this step (one logits row each, in plan order).
    pub fn num_sampled(&self) -> usize {
        self.seqs.iter().filter(|s| s.sample).count()
    }

    /// Logits rows sampled from this step (one per sampling sequence, plus one per proposed
    /// token), before the prompt log-probability rows.
    pub fn num_sampling_rows(&self) -> usize {
        self.seqs.iter().map(ScheduledSeq::num_sampling_rows).sum()
    }

    /// Whether any sequence verifies proposed tokens this step.
    pub fn has_drafts(&self) -> bool {
        self.seqs.iter().any(|s| s.num_draft_tokens > 0)
    }

    /// The sequences that return prompt log-probabilities this step, in plan order.
    pub fn prompt_logprob_seqs(&self) -> impl Iterator<Item = (&ScheduledSeq, &PromptLogprobRows)> {
        self.seqs
            .iter()
            .filter_map(|s| s.prompt_logprobs.as_ref().map(|rows| (s, rows)))
    }
}

/// The model's output for one step: one logits row per sampling sequence, in plan order (for
/// tests and tools that look at logits; serving samples them where they are).
#[cfg(any(feature = "testing", feature = "cuda"))]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepLogits {
    pub vocab_size: usize,
    /// `num_sampled × vocab_size` values, row-major.
    pub values: Vec<f32>,
}

#[cfg(feature = "testing")]
impl StepLogits {
    pub fn row(&self, index: usize) -> &[f32] {
        &self.values[index * self.vocab_size..(index + 1) * self.vocab_size]
    }

    pub fn num_rows(&self) -> usize {
        self.values.len().checked_div(self.vocab_size).unwrap_or(0)
    }
}
