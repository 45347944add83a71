//! Which proposed tokens a decoding sequence verifies this step (speculative decoding). The
//! proposals are capped so that everything accepted still fits the sequence's limits: at most
//! `num_speculative_tokens`, the step's token budget less the decode token itself, and one fewer
//! than the output tokens and context positions left (the target's own token always follows the
//! accepted ones). With prompt lookup the scheduler proposes the tokens; with a draft model it
//! reserves the rows (`PLACEHOLDER_TOKEN_ID`) and the runner's draft model fills them. Proposals
//! get KV slots only when they fit: otherwise the sequence decodes without them
//! (`allocate_with_drafts`), before anything would be preempted for them.

use crate::kv::KvCacheManager;
use crate::sequence::Sequence;
use crate::spec_decode::ngram::NgramProposer;
use crate::spec_decode::{SpeculativeConfig, SpeculativeMethod, PLACEHOLDER_TOKEN_ID};

/// The scheduler's proposer.
#[derive(Debug, Clone)]
pub struct Speculation {
    proposer: Proposer,
    num_speculative_tokens: usize,
    disable_by_batch_size: Option<usize>,
}

#[derive(Debug, Clone)]
enum Proposer {
    Ngram(NgramProposer),
    /// The runner proposes (a draft model): rows are reserved.
    Runner,
}

impl Speculation {
    pub fn new(config: &SpeculativeConfig) -> Self {
        let proposer = match &config.method {
            SpeculativeMethod::Ngram(ngram) => Proposer::Ngram(NgramProposer::new(*ngram)),
            SpeculativeMethod::DraftModel(_) => Proposer::Runner,
        };
        Self {
            proposer,
            num_speculative_tokens: config.num_speculative_tokens,
            disable_by_batch_size: config.disable_by_batch_size,
        }
    }

    /// Whether a step that starts with `num_running` running sequences proposes tokens
    /// (`disable_by_batch_size` turns proposals off from that many on).
    pub fn is_on_at(&self, num_running: usize) -> bool {
        self.disable_by_batch_size
            .is_none_or(|max_num_running| num_running < max_num_running)
    }

    /// Whether the proposals are tokens (prompt lookup) rather than reserved rows.
    pub fn proposes_tokens(&self) -> bool {
        matches!(self.proposer, Proposer::Ngram(_))
    }

    /// The tokens `seq` (decoding: one uncomputed token) verifies this step, with
    /// `num_budget_tokens` left in the step besides its decode token.
    pub fn propose(&self, seq: &Sequence, num_budget_tokens: usize, max_model_len: usize) -> Vec<u32> {
        let num_output_left = seq.max_output_tokens.saturating_sub(seq.num_output_tokens());
        let num_positions_left = max_model_len.saturating_sub(seq.num_tokens());
        let max_tokens = self
            .num_speculative_tokens
            .min(num_budget_tokens)
            .min(num_output_left.saturating_sub(1))
            .min(num_positions_left.saturating_sub(1));
        match &self.proposer {
            Proposer::Ngram(ngram) => match seq.predicted_token_ids.as_deref() {
                Some(prediction) => {
                    let num_output = seq.num_output_tokens();
                    ngram.propose_with_prediction(&seq.token_ids, num_output, prediction, max_tokens)
                }
                None => ngram.propose(&seq.token_ids, max_tokens),
            },
            Proposer::Runner => vec![PLACEHOLDER_TOKEN_ID; max_tokens],
        }
    }
}

/// Reserves KV slots for `num_new` tokens and the proposed ones; when the proposals do not fit,
/// for the `num_new` tokens alone. Returns the proposals that got slots, `None` when not even the
/// tokens themselves fit (the caller preempts).
pub(super) fn allocate_with_drafts(
    kv: &mut KvCacheManager,
    seq: &mut Sequence,
    num_new: usize,
    drafts: Vec<u32>,
) -> Option<Vec<u32>> {
    let start = seq.num_computed_tokens;
    if !drafts.is_empty()
        && kv
            .allocate_slots(&mut seq.block_table, start, num_new + drafts.len(), &[])
            .is_some()
    {
        return Some(drafts);
    }
    kv.allocate_slots(&mut seq.block_table, start, num_new, &[])
        .map(|()| Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
    use crate::spec_decode::NgramConfig;

    fn speculation(k: usize) -> Speculation {
        Speculation::new(&speculation_config(k))
    }

    fn speculation_config(k: usize) -> SpeculativeConfig {
        SpeculativeConfig {
            method: SpeculativeMethod::Ngram(NgramConfig {
                prompt_lookup_min: 1,
                prompt_lookup_max: 3,
            }),
            num_speculative_tokens: k,
            disable_by_batch_size: None,
        }
    }

    /// A sequence whose prompt repeats "1 2 3 4 5 6 7 8" and ends on "1 2".
    fn seq(max_output_tokens: usize) -> Sequence {
        let prompt = vec![1, 2, 3, 4, 5, 6, 7, 8, 1, 2];
        let request = EngineRequest::new(
            RequestId(1),
            prompt,
            SamplingParams::greedy(),
            StopConditions::default(),
        );
        Sequence::new(request, max_output_tokens)
    }

    #[test]
    fn disable_by_batch_size_turns_proposals_off_from_that_many_running_on() {
        let config = |disable_by_batch_size| SpeculativeConfig {
            disable_by_batch_size,
            ..speculation_config(4)
        };
        let capped = Speculation::new(&config(Some(3)));
        assert!(capped.is_on_at(1) && capped.is_on_at(2));
        assert!(!capped.is_on_at(3) && !capped.is_on_at(30));
        assert!(Speculation::new(&config(None)).is_on_at(10_000));
    }

    /// A scheduler speculating with `disable_by_batch_size`, after the prefill of `num_seqs`
    /// sequences (each now decoding, its sampled token `7` found earlier in its prompt).
    fn decoding(num_seqs: u64, disable_by_batch_size: Option<usize>) -> crate::scheduler::Scheduler {
        use crate::kv::KvCacheManager;
        use crate::runner::StepOutput;
        use crate::scheduler::{Scheduler, SchedulerLimits};
        let limits = SchedulerLimits {
            max_num_seqs: 8,
            max_num_batched_tokens: 256,
            max_model_len: 512,
            enable_chunked_prefill: false,
            max_loras: None,
        };
        let config = SpeculativeConfig {
            disable_by_batch_size,
            ..speculation_config(3)
        };
        let kv = KvCacheManager::new(256, 4, false);
        let mut scheduler = Scheduler::new(limits, kv, vec![2]).with_speculation(&config);
        for id in 1..=num_seqs {
            let mut seq = seq(100);
            seq.id = RequestId(id);
            scheduler.add(seq);
        }
        let prefill = scheduler.schedule();
        let sampled = vec![Some(7); prefill.num_sampled()];
        scheduler.update(&prefill, &StepOutput::from_ids(sampled));
        assert_eq!(scheduler.num_decoding(), num_seqs as usize);
        scheduler
    }

    #[test]
    fn a_step_with_disable_by_batch_size_running_sequences_proposes_nothing() {
        let num_drafts = |scheduler: &mut crate::scheduler::Scheduler| {
            let plan = scheduler.schedule();
            assert_eq!(plan.seqs.len(), 2, "both sequences decode");
            let drafts: Vec<usize> = plan.seqs.iter().map(|s| s.draft_token_ids().len()).collect();
            drafts
        };
        assert_eq!(num_drafts(&mut decoding(2, None)), [3, 3]);
        assert_eq!(num_drafts(&mut decoding(2, Some(3))), [3, 3]);
        assert_eq!(num_drafts(&mut decoding(2, Some(2))), [0, 0]);
    }

    #[test]
    fn proposals_stop_where_the_sequences_limits_would() {
        let spec = speculation(4);
        assert_eq!(spec.propose(&seq(100), 100, 1000), vec![3, 4, 5, 6]);
        // The step's budget.
        assert_eq!(spec.propose(&seq(100), 2, 1000), vec![3, 4]);
        // Three output tokens left: two proposals and the target's own token.
        assert_eq!(spec.propose(&seq(3), 100, 1000), vec![3, 4]);
        assert!(spec.propose(&seq(1), 100, 1000).is_empty());
        // Two context positions left (10 tokens of 12).
        assert_eq!(spec.propose(&seq(100), 100, 12), vec![3]);
        assert!(spec.propose(&seq(100), 0, 1000).is_empty());
    }

    #[test]
    fn a_draft_model_gets_reserved_rows_within_the_same_caps() {
        let spec = Speculation::new(&SpeculativeConfig {
            method: SpeculativeMethod::DraftModel(crate::spec_decode::DraftModelConfig {
                model: "draft.gguf".into(),
            }),
            num_speculative_tokens: 4,
            disable_by_batch_size: None,
        });
        assert_eq!(spec.propose(&seq(100), 100, 1000), vec![PLACEHOLDER_TOKEN_ID; 4]);
        assert_eq!(spec.propose(&seq(3), 100, 1000).len(), 2);
        assert_eq!(spec.propose(&seq(100), 100, 12).len(), 1);
    }
}
