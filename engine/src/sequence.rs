//! `Sequence`: one request's state inside the scheduler (token ids, progress, blocks, stops).

use std::sync::Arc;
use std::time::Instant;

use crate::events::{FinishReason, RequestTimings, SpecDecodeUsage, Usage};
use crate::kv::block_pool::BlockId;
use crate::kv::hash::{BlockHash, CacheScope};
use crate::lora::adapter::LoraAdapter;
use crate::prompt_logprobs::PromptLogprobsProgress;
use crate::request::{
    EngineRequest, RepetitionDetection, RequestId, SamplingParams, StopConditions,
};

/// Where a sequence is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceStatus {
    Waiting,
    Running,
    Finished(FinishReason),
}

/// A request being served. `token_ids` holds the prompt then the output; the scheduler hands out
/// tokens until `num_computed_tokens` catches up with `token_ids.len()`.
#[derive(Debug)]
pub struct Sequence {
    pub id: RequestId,
    pub token_ids: Vec<u32>,
    pub num_prompt_tokens: usize,
    pub num_computed_tokens: usize,
    pub status: SequenceStatus,
    pub block_table: Vec<BlockId>,
    /// Hashes of the full blocks computed so far (kept across preemption).
    pub block_hashes: Vec<BlockHash>,
    /// Leading blocks of `block_table` already registered in the prefix cache.
    pub num_registered_blocks: usize,
    /// What its cached blocks may be shared with (cache salt, LoRA adapter).
    pub cache_scope: CacheScope,
    /// The LoRA adapter it runs with (`None`: the base model).
    pub lora: Option<Arc<LoraAdapter>>,
    /// Prompt tokens found in the prefix cache at first admission.
    pub num_cached_tokens: usize,
    pub sampling: SamplingParams,
    pub stop: StopConditions,
    /// Most output tokens, after resolving `max_tokens` against `max_model_len`.
    pub max_output_tokens: usize,
    pub arrival: Instant,
    pub first_scheduled: Option<Instant>,
    pub first_token: Option<Instant>,
    pub num_preemptions: u32,
    /// The prompt log-probabilities collected so far, while the request wants them and they
    /// have not been sent (`None` otherwise).
    pub prompt_logprobs: Option<PromptLogprobsProgress>,
    /// Its proposed and accepted tokens, when the engine speculates (`None` otherwise).
    pub spec_decode: Option<SpecDecodeUsage>,
    /// The client's predicted output (`EngineRequest::predicted_token_ids`), shared by the
    /// request's choices.
    pub predicted_token_ids: Option<Arc<[u32]>>,
}

impl Sequence {
    pub fn new(request: EngineRequest, max_output_tokens: usize) -> Self {
        Self {
            id: request.id,
            num_prompt_tokens: request.prompt.len(),
            token_ids: request.prompt,
            num_computed_tokens: 0,
            status: SequenceStatus::Waiting,
            block_table: Vec::new(),
            block_hashes: Vec::new(),
            num_registered_blocks: 0,
            cache_scope: CacheScope {
                salt: request.cache_salt,
                lora: request.lora.as_ref().map(|a| a.id()),
            },
            lora: request.lora,
            num_cached_tokens: 0,
            sampling: request.sampling,
            stop: request.stop,
            max_output_tokens,
            arrival: request.arrival,
            first_scheduled: None,
            first_token: None,
            num_preemptions: 0,
            prompt_logprobs: request.prompt_logprobs.map(PromptLogprobsProgress::new),
            spec_decode: None,
            predicted_token_ids: request.predicted_token_ids,
        }
    }

    pub fn num_tokens(&self) -> usize {
        self.token_ids.len()
    }

    pub fn num_output_tokens(&self) -> usize {
        self.token_ids.len() - self.num_prompt_tokens
    }

    #[cfg(feature = "testing")]
    pub fn prompt_token_ids(&self) -> &[u32] {
        &self.token_ids[..self.num_prompt_tokens]
    }

    #[cfg(feature = "testing")]
    pub fn output_token_ids(&self) -> &[u32] {
        &self.token_ids[self.num_prompt_tokens..]
    }

    /// Tokens held but not yet run through the model.
    pub fn num_uncomputed_tokens(&self) -> usize {
        self.num_tokens() - self.num_computed_tokens
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.status, SequenceStatus::Finished(_))
    }

    pub fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.num_prompt_tokens,
            completion_tokens: self.num_output_tokens(),
            num_cached_tokens: self.num_cached_tokens,
            spec_decode: self.spec_decode,
        }
    }

    pub fn timings(&self, finished: Instant) -> RequestTimings {
        RequestTimings {
            queued: self.arrival,
            first_scheduled: self.first_scheduled,
            first_token: self.first_token,
            finished,
            num_preemptions: self.num_preemptions,
        }
    }

    /// Decides whether the token just appended ends the sequence.
    pub fn check_stop(&self, eos_token_ids: &[u32], max_model_len: usize) -> Option<FinishReason> {
        let last = *self.token_ids.last()?;
        let num_output = self.num_output_tokens();
        if num_output >= self.stop.min_tokens {
            if self.stop.stop_token_ids.contains(&last) {
                return Some(FinishReason::Stop {
                    stop_token_id: Some(last),
                });
            }
            if !self.stop.ignore_eos && eos_token_ids.contains(&last) {
                return Some(FinishReason::Stop {
                    stop_token_id: None,
                });
            }
        }
        if num_output >= self.max_output_tokens || self.num_tokens() >= max_model_len {
            return Some(FinishReason::Length);
        }
        let output = &self.token_ids[self.num_prompt_tokens..];
        let looping = |detection: &RepetitionDetection| detection.detects(output);
        if num_output >= self.stop.min_tokens && self.stop.repetition.as_ref().is_some_and(looping) {
            return Some(FinishReason::Repetition);
        }
        None
    }
}
