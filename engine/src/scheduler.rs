//! Continuous batching: which sequences compute how many tokens in the next step.
//!
//! One counter model, as in vLLM v1: each sequence has `num_computed_tokens`, and the scheduler
//! hands out tokens (capped by the step's token budget) until it catches up with the tokens the
//! sequence holds. Prefill, chunked prefill and decode are the same arithmetic. When blocks run
//! out, the running sequence that arrived last is preempted by recompute. A step may also cap
//! its prefill tokens (the ITL budget, `itl_budget.rs`, computed by the engine core and passed
//! in as a number: the scheduler reads no clock).

mod decayed_fit;
pub mod itl_budget;
mod speculation;
pub mod step_cost;
mod update;
#[cfg(test)]
mod prefill_cap_tests;
#[cfg(test)]
mod update_tests;
#[cfg(test)]
mod lora_tests;

use std::collections::VecDeque;
use std::time::Instant;

use speculation::{allocate_with_drafts, Speculation};
use update::RunningState;
pub use update::StepUpdate;

use crate::batch::{BatchPlan, ScheduledSeq};
use crate::error::EngineError;
use crate::events::FinishReason;
use crate::kv::manager::KvCacheManager;
use crate::lora::adapter::LoraId;
use crate::prompt_logprobs::cap_chunk;
use crate::request::RequestId;
use crate::runner::StepOutput;
use crate::sequence::{Sequence, SequenceStatus};
use crate::spec_decode::{SpecDecodeCounters, SpeculativeConfig};

/// The limits the scheduler enforces every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerLimits {
    pub max_num_seqs: usize,
    pub max_num_batched_tokens: usize,
    pub max_model_len: usize,
    pub enable_chunked_prefill: bool,
    /// Most distinct LoRA adapters among running sequences (`None`: no limit).
    pub max_loras: Option<usize>,
}

#[derive(Debug)]
pub struct Scheduler {
    limits: SchedulerLimits,
    kv: KvCacheManager,
    waiting: VecDeque<Sequence>,
    running: Vec<Sequence>,
    eos_token_ids: Vec<u32>,
    num_preemptions_total: u64,
    prefix_cache: PrefixCacheCounters,
    /// Proposes tokens for decoding sequences to verify (`None`: no speculative decoding).
    speculation: Option<Speculation>,
    spec_decode: SpecDecodeCounters,
}

/// Prefix-cache lookups at first admission, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixCacheCounters {
    pub num_queried_tokens: u64,
    pub num_hit_tokens: u64,
}

impl Scheduler {
    pub fn new(limits: SchedulerLimits, kv: KvCacheManager, eos_token_ids: Vec<u32>) -> Self {
        Self {
            limits,
            kv,
            waiting: VecDeque::new(),
            running: Vec::new(),
            eos_token_ids,
            num_preemptions_total: 0,
            prefix_cache: PrefixCacheCounters::default(),
            speculation: None,
            spec_decode: SpecDecodeCounters::default(),
        }
    }

    /// Decoding sequences verify proposed tokens every step (speculative decoding).
    pub fn with_speculation(mut self, config: &SpeculativeConfig) -> Self {
        self.spec_decode = SpecDecodeCounters::new(config.num_speculative_tokens);
        self.speculation = Some(Speculation::new(config));
        self
    }

    /// Whether the plans hold the proposed tokens themselves (prompt lookup), rather than rows
    /// reserved for the runner's draft model.
    pub fn proposes_tokens(&self) -> bool {
        self.speculation
            .as_ref()
            .is_some_and(Speculation::proposes_tokens)
    }

    /// What speculation proposed and what was accepted (`None` without speculation).
    pub fn spec_decode_counters(&self) -> Option<&SpecDecodeCounters> {
        self.speculation.as_ref().map(|_| &self.spec_decode)
    }

    pub fn kv(&self) -> &KvCacheManager {
        &self.kv
    }

    pub fn kv_mut(&mut self) -> &mut KvCacheManager {
        &mut self.kv
    }

    pub fn limits(&self) -> SchedulerLimits {
        self.limits
    }

    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    pub fn num_preemptions_total(&self) -> u64 {
        self.num_preemptions_total
    }

    pub fn prefix_cache_counters(&self) -> PrefixCacheCounters {
        self.prefix_cache
    }

    /// Forgets every cached prefix; returns how many blocks left the cache.
    pub fn reset_prefix_cache(&mut self) -> usize {
        self.kv.reset_prefix_cache()
    }

    /// Ids of the waiting sequences, first in line first.
    #[cfg(feature = "testing")]
    pub fn waiting_ids(&self) -> Vec<RequestId> {
        self.waiting.iter().map(|s| s.id).collect()
    }

    pub fn has_work(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty()
    }

    pub fn contains(&self, id: RequestId) -> bool {
        self.running
            .iter()
            .chain(self.waiting.iter())
            .any(|s| s.id == id)
    }

    /// Queues a validated sequence.
    pub fn add(&mut self, mut seq: Sequence) {
        if self.speculation.is_some() {
            seq.spec_decode.get_or_insert_with(Default::default);
        }
        self.waiting.push_back(seq);
    }

    /// Removes a sequence wherever it is and frees its blocks.
    pub fn abort(&mut self, id: RequestId) -> Option<Sequence> {
        let mut seq = if let Some(i) = self.running.iter().position(|s| s.id == id) {
            self.running.remove(i)
        } else {
            let i = self.waiting.iter().position(|s| s.id == id)?;
            self.waiting.remove(i)?
        };
        self.kv.free(&mut seq);
        seq.status = SequenceStatus::Finished(FinishReason::Abort);
        Some(seq)
    }

    /// Removes every sequence (at shutdown), freeing their blocks.
    pub fn abort_all(&mut self) -> Vec<Sequence> {
        let ids: Vec<RequestId> = self
            .running
            .iter()
            .chain(self.waiting.iter())
            .map(|s| s.id)
            .collect();
        ids.into_iter().filter_map(|id| self.abort(id)).collect()
    }

    /// Running sequences that compute one token next step (decodes).
    pub fn num_decoding(&self) -> usize {
        self.running
            .iter()
            .filter(|s| s.num_uncomputed_tokens() == 1)
            .count()
    }

    /// Plans the next step with no prefill cap beyond the token budget.
    #[cfg(any(test, feature = "testing"))]
    pub fn schedule(&mut self) -> BatchPlan {
        self.schedule_within(None)
    }

    /// Plans the next step: running sequences first (preempting the latest arrival when blocks
    /// run out), then waiting ones in arrival order while budget, blocks and `max_num_seqs` allow.
    /// Sequences computing more than one token (prefill) share at most `max_prefill_tokens`
    /// (`None`: no cap); decodes are never held back by it.
    pub fn schedule_within(&mut self, max_prefill_tokens: Option<usize>) -> BatchPlan {
        let mut plan = BatchPlan::default();
        let mut budget = StepBudget {
            num_tokens: self.limits.max_num_batched_tokens,
            num_prefill_tokens: max_prefill_tokens.unwrap_or(usize::MAX),
        };
        let preempted = self.schedule_running(&mut plan, &mut budget);
        if !preempted {
            self.schedule_waiting(&mut plan, &mut budget);
        }
        plan
    }

    fn schedule_running(&mut self, plan: &mut BatchPlan, budget: &mut StepBudget) -> bool {
        let mut preempted = false;
        let mut index = 0;
        let num_running = self.running.len();
        let speculating = self.speculation.as_ref().is_some_and(|s| s.is_on_at(num_running));
        while index < self.running.len() && budget.num_tokens > 0 {
            let num_uncomputed = self.running[index].num_uncomputed_tokens();
            let chunked = self.limits.enable_chunked_prefill;
            let num_new = chunk_of(chunked, &self.running[index], budget.grant(num_uncomputed));
            if num_new == 0 {
                // A prefill past the step's prefill cap: the decodes behind it still run.
                index += 1;
                continue;
            }
            let decoding = num_uncomputed == 1 && num_new == 1;
            let drafts = match (&self.speculation, speculating && decoding) {
                (Some(spec), true) => {
                    spec.propose(&self.running[index], budget.num_tokens - 1, self.limits.max_model_len)
                }
                _ => Vec::new(),
            };
            let seq = &mut self.running[index];
            if let Some(drafts) = allocate_with_drafts(&mut self.kv, seq, num_new, drafts) {
                budget.spend(num_uncomputed, num_new + drafts.len());
                push_scheduled(plan, seq, num_new, drafts);
                index += 1;
                continue;
            }
            preempted = true;
            let victim = self.latest_arrival_from(index);
            self.preempt(victim);
            if victim == index {
                break;
            }
        }
        preempted
    }

    /// Admits waiting sequences in arrival order while the budget, the batch and the KV cache
    /// allow. A sequence whose adapter would exceed `max_loras` distinct adapters is passed over
    /// (it keeps its place) for later ones that fit.
    fn schedule_waiting(&mut self, plan: &mut BatchPlan, budget: &mut StepBudget) {
        // Only a LoRA engine tracks adapters; a base-only engine does no work for them.
        let mut adapters = match self.limits.max_loras {
            Some(_) => self.running_adapters(),
            None => Vec::new(),
        };
        let mut index = 0;
        while budget.num_tokens > 0 && self.running.len() < self.limits.max_num_seqs {
            let Some(seq) = self.waiting.get_mut(index) else {
                break;
            };
            let adapter = seq.lora.as_ref().map(|a| a.id());
            if let (Some(id), Some(max_loras)) = (adapter, self.limits.max_loras) {
                if !adapters.contains(&id) && adapters.len() >= max_loras {
                    index += 1;
                    continue;
                }
            }
            let computed = self.kv.get_computed_blocks(seq);
            let num_uncomputed = seq.num_tokens() - computed.num_tokens;
            let chunked = self.limits.enable_chunked_prefill;
            let num_new = chunk_of(chunked, seq, budget.grant(num_uncomputed));
            if num_new == 0 || (num_new < num_uncomputed && !self.limits.enable_chunked_prefill) {
                break;
            }
            let table = &mut seq.block_table;
            if self
                .kv
                .allocate_slots(table, computed.num_tokens, num_new, &computed.blocks)
                .is_none()
            {
                break;
            }
            let Some(mut seq) = self.waiting.remove(index) else {
                break;
            };
            if let Some(id) = adapter {
                if !adapters.contains(&id) {
                    adapters.push(id);
                }
            }
            seq.num_computed_tokens = computed.num_tokens;
            seq.num_registered_blocks = computed.blocks.len();
            if seq.first_scheduled.is_none() {
                seq.num_cached_tokens = computed.num_tokens;
                if self.kv.prefix_caching_enabled() {
                    self.prefix_cache.num_queried_tokens += seq.num_prompt_tokens as u64;
                    self.prefix_cache.num_hit_tokens += computed.num_tokens as u64;
                }
                seq.first_scheduled = Some(Instant::now());
            }
            seq.status = SequenceStatus::Running;
            push_scheduled(plan, &seq, num_new, Vec::new());
            budget.spend(num_uncomputed, num_new);
            self.running.push(seq);
        }
    }

    /// The names of the adapters of running and of waiting sequences, each sorted and distinct.
    pub fn lora_adapter_names(&self) -> (Vec<String>, Vec<String>) {
        fn names<'a>(seqs: impl Iterator<Item = &'a Sequence>) -> Vec<String> {
            let set: std::collections::BTreeSet<&str> =
                seqs.filter_map(|s| s.lora.as_deref().map(|a| a.name())).collect();
            set.into_iter().map(str::to_string).collect()
        }
        (names(self.running.iter()), names(self.waiting.iter()))
    }

    /// The distinct adapters of the running sequences.
    fn running_adapters(&self) -> Vec<LoraId> {
        let mut ids: Vec<LoraId> = Vec::new();
        for id in self.running.iter().filter_map(|s| s.lora.as_ref().map(|a| a.id())) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    /// Index of the running sequence (from `start` on) that arrived last.
    fn latest_arrival_from(&self, start: usize) -> usize {
        (start..self.running.len())
            .max_by_key(|&i| (self.running[i].arrival, self.running[i].id))
            .unwrap_or(start)
    }

    /// Preemption by recompute: drop the sequence's blocks and queue it first in line.
    fn preempt(&mut self, index: usize) {
        let mut seq = self.running.remove(index);
        self.kv.free(&mut seq);
        seq.num_computed_tokens = 0;
        seq.status = SequenceStatus::Waiting;
        seq.num_preemptions += 1;
        self.num_preemptions_total += 1;
        tracing::debug!(request = %seq.id, "preempted by recompute");
        self.waiting.push_front(seq);
    }

    /// Ends every sequence of a failed step with `error`, freeing their blocks.
    pub fn fail_plan(
        &mut self,
        plan: &BatchPlan,
        error: &EngineError,
    ) -> Vec<(Sequence, EngineError)> {
        plan.seqs
            .iter()
            .filter_map(|s| self.abort(s.id))
            .map(|seq| (seq, error.clone()))
            .collect()
    }

    /// Applies a step's results: advances counters, takes the chosen token, checks stops, frees
    /// finished blocks.
    pub fn update(&mut self, plan: &BatchPlan, output: &StepOutput) -> StepUpdate {
        let state = RunningState {
            running: &mut self.running,
            kv: &mut self.kv,
            eos_token_ids: &self.eos_token_ids,
            max_model_len: self.limits.max_model_len,
            spec_decode: &mut self.spec_decode,
        };
        state.apply(plan, output)
    }

    /// Block accounting invariants over every live sequence.
    pub fn check_invariants(&self) -> Result<(), String> {
        let tables = self
            .running
            .iter()
            .chain(self.waiting.iter())
            .map(|s| s.block_table.as_slice());
        self.kv.check_invariants(tables)
    }
}

/// What is left of a step's budgets while it is planned.
struct StepBudget {
    num_tokens: usize,
    /// Tokens left for sequences computing more than one token.
    num_prefill_tokens: usize,
}

impl StepBudget {
    /// Tokens a sequence with `num_uncomputed` tokens gets: one (a decode) whenever any budget is
    /// left, more (prefill) within both budgets.
    fn grant(&self, num_uncomputed: usize) -> usize {
        match num_uncomputed {
            0 | 1 => num_uncomputed.min(self.num_tokens),
            _ => num_uncomputed
                .min(self.num_tokens)
                .min(self.num_prefill_tokens),
        }
    }

    fn spend(&mut self, num_uncomputed: usize, num_new: usize) {
        self.num_tokens -= num_new;
        if num_uncomputed > 1 {
            self.num_prefill_tokens = self.num_prefill_tokens.saturating_sub(num_new);
        }
    }
}

/// Tokens a sequence computes this step out of the `granted` ones: fewer while its prompt
/// log-probabilities are computed, when prefills may be chunked.
fn chunk_of(enable_chunked_prefill: bool, seq: &Sequence, granted: usize) -> usize {
    match enable_chunked_prefill {
        true => cap_chunk(seq.prompt_logprobs.as_ref(), granted),
        false => granted,
    }
}

fn push_scheduled(plan: &mut BatchPlan, seq: &Sequence, num_new: usize, drafts: Vec<u32>) {
    let start = seq.num_computed_tokens;
    let num_draft_tokens = drafts.len();
    let mut new_token_ids = seq.token_ids[start..start + num_new].to_vec();
    new_token_ids.extend(drafts);
    plan.seqs.push(ScheduledSeq {
        id: seq.id,
        num_computed_tokens: start,
        new_token_ids,
        num_draft_tokens,
        block_table: seq.block_table.clone(),
        sample: start + num_new == seq.num_tokens(),
        lora: seq.lora.clone(),
        prompt_logprobs: seq.prompt_logprobs.as_ref().and_then(|progress| {
            progress.rows_for(&seq.token_ids[..seq.num_prompt_tokens], start, num_new)
        }),
    });
    plan.num_batched_tokens += num_new + num_draft_tokens;
}
