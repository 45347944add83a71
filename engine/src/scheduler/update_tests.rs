//! `Scheduler::update` with tokens an executor chose (`StepOutput`): appended and stopped
//! like sampled tokens; a token not ready leaves the sequence's last token to compute again.

use super::{Scheduler, SchedulerLimits};
use crate::events::FinishReason;
use crate::kv::KvCacheManager;
use crate::request::{
    EngineRequest, RepetitionDetection, RequestId, SamplingParams, StopConditions,
};
use crate::runner::StepOutput;
use crate::sequence::{Sequence, SequenceStatus};

const EOS: u32 = 2;
const BLOCK_SIZE: usize = 4;

fn scheduler(max_num_batched_tokens: usize) -> Scheduler {
    let limits = SchedulerLimits {
        max_num_seqs: 8,
        max_num_batched_tokens,
        max_model_len: 64,
        enable_chunked_prefill: true,
        max_loras: None,
    };
    Scheduler::new(limits, KvCacheManager::new(32, BLOCK_SIZE, true), vec![EOS])
}

fn sequence(id: u64, num_prompt_tokens: usize, stop: StopConditions) -> Sequence {
    let prompt = (0..num_prompt_tokens as u32).map(|t| 100 + t).collect();
    let max_output_tokens = stop.max_tokens.unwrap_or(32);
    let mut sampling = SamplingParams::greedy();
    sampling.logprobs = id.is_multiple_of(2).then_some(3);
    Sequence::new(
        EngineRequest::new(RequestId(id), prompt, sampling, stop),
        max_output_tokens,
    )
}

fn stop(max_tokens: usize) -> StopConditions {
    StopConditions {
        max_tokens: Some(max_tokens),
        ..StopConditions::default()
    }
}

/// One step in which every sampling sequence gets `choose(id)`; returns the finished ones.
fn step(
    scheduler: &mut Scheduler,
    choose: impl Fn(RequestId) -> Option<u32>,
) -> Vec<(RequestId, FinishReason)> {
    let plan = scheduler.schedule();
    let tokens: Vec<Option<u32>> = plan
        .seqs
        .iter()
        .filter(|s| s.sample)
        .map(|s| choose(s.id))
        .collect();
    let update = scheduler.update(&plan, &StepOutput::from_ids(tokens));
    assert_eq!(scheduler.check_invariants(), Ok(()));
    for (id, token) in &update.tokens {
        assert!(token.top_logprobs.is_empty());
        let expected = id.0.is_multiple_of(2).then_some(0.0);
        assert_eq!(token.logprob, expected, "{id}: logprob only when asked for");
    }
    update
        .finished
        .iter()
        .map(|s| match s.status {
            SequenceStatus::Finished(reason) => (s.id, reason),
            status => panic!("{}: finished with status {status:?}", s.id),
        })
        .collect()
}

#[test]
fn chosen_tokens_stop_like_sampled_ones() {
    let mut scheduler = scheduler(64);
    scheduler.add(sequence(1, 5, stop(2)));
    scheduler.add(sequence(2, 5, stop(10)));
    let ignore = StopConditions {
        ignore_eos: true,
        ..stop(4)
    };
    scheduler.add(sequence(3, 5, ignore));
    let stop_id = StopConditions {
        stop_token_ids: vec![9],
        ..stop(10)
    };
    scheduler.add(sequence(4, 5, stop_id));
    let min_tokens = StopConditions {
        min_tokens: 2,
        ..stop(10)
    };
    scheduler.add(sequence(5, 5, min_tokens));
    // Steps 0 and 1 emit text; step 2 emits EOS (or stop id 9 for request 4) to everyone.
    let mut finished = Vec::new();
    for index in 0..6 {
        finished.extend(step(&mut scheduler, |id| match (index, id.0) {
            (2.., 4) => Some(9),
            (2.., _) => Some(EOS),
            _ => Some(7),
        }));
    }
    finished.sort_by_key(|(id, _)| *id);
    let stop_eos = FinishReason::Stop {
        stop_token_id: None,
    };
    let expected = vec![
        (RequestId(1), FinishReason::Length),
        (RequestId(2), stop_eos),
        (RequestId(3), FinishReason::Length),
        (
            RequestId(4),
            FinishReason::Stop {
                stop_token_id: Some(9),
            },
        ),
        (RequestId(5), stop_eos),
    ];
    assert_eq!(finished, expected);
    assert!(!scheduler.has_work());
    assert_eq!(scheduler.kv().num_used_blocks(), 0);
}

#[test]
fn min_tokens_holds_a_chosen_eos_back_as_check_stop_does() {
    let mut scheduler = scheduler(64);
    let min_tokens = StopConditions {
        min_tokens: 2,
        ..stop(10)
    };
    scheduler.add(sequence(1, 3, min_tokens));
    // EOS as the first token does not stop; as the second it does (`check_stop` counts the token
    // just appended; the sampler would have banned it, which is why the mock never puts EOS
    // before position min_tokens + 1).
    assert!(step(&mut scheduler, |_| Some(EOS)).is_empty());
    assert_eq!(step(&mut scheduler, |_| Some(EOS)).len(), 1);
}

#[test]
fn a_looping_output_ends_with_repetition_and_frees_its_blocks() {
    let mut scheduler = scheduler(64);
    let detect = |min_tokens| StopConditions {
        min_tokens,
        repetition: Some(RepetitionDetection {
            min_pattern_size: 1,
            max_pattern_size: 3,
            min_count: 3,
        }),
        ..stop(40)
    };
    scheduler.add(sequence(1, 3, detect(0)));
    // min_tokens holds detection back, as it holds EOS back (vLLM's order).
    scheduler.add(sequence(2, 3, detect(10)));
    scheduler.add(sequence(3, 3, stop(40)));
    // Every sequence writes 4 5 6 4 5 6 4 5 6 …: the ninth token completes a third copy.
    let mut finished_at = Vec::new();
    for index in 0..12 {
        let pattern = [4, 5, 6][index % 3];
        for (id, reason) in step(&mut scheduler, |_| Some(pattern)) {
            finished_at.push((id, reason, index + 1));
        }
    }
    assert_eq!(
        finished_at,
        [
            (RequestId(1), FinishReason::Repetition, 9),
            (RequestId(2), FinishReason::Repetition, 10),
        ]
    );
    assert!(scheduler.has_work(), "the third has no detection and goes on");
}

#[test]
fn a_token_not_ready_is_computed_again() {
    let mut scheduler = scheduler(64);
    scheduler.add(sequence(1, 6, stop(2)));
    let plan = scheduler.schedule();
    assert_eq!(plan.num_batched_tokens, 6);
    let update = scheduler.update(&plan, &StepOutput::from_ids(vec![None]));
    assert!(update.tokens.is_empty());
    assert_eq!(update.num_computed_tokens, 5);
    assert_eq!(update.num_prompt_tokens, 0);
    // Not ready again: the prompt's last token costs one token of budget per step, like a decode.
    for _ in 0..3 {
        let plan = scheduler.schedule();
        assert_eq!(plan.seqs[0].new_token_ids, vec![105]);
        assert_eq!(plan.seqs[0].num_computed_tokens, 5);
        assert!(plan.seqs[0].sample);
        let update = scheduler.update(&plan, &StepOutput::from_ids(vec![None]));
        assert_eq!(update.num_computed_tokens, 0);
        assert_eq!(scheduler.check_invariants(), Ok(()));
    }
    let plan = scheduler.schedule();
    let update = scheduler.update(&plan, &StepOutput::from_ids(vec![Some(7)]));
    assert_eq!(update.num_computed_tokens, 1);
    assert_eq!(update.num_prompt_tokens, 6, "counted at the first token");
    assert_eq!(update.tokens.len(), 1);
    assert!(!update.tokens[0].1.is_last, "one more token to go");
    // A decode that is not ready recomputes its last token too; the prompt is not counted again.
    let plan = scheduler.schedule();
    assert_eq!(plan.seqs[0].new_token_ids, vec![7]);
    let update = scheduler.update(&plan, &StepOutput::from_ids(vec![None]));
    assert_eq!(update.num_computed_tokens, 0);
    let plan = scheduler.schedule();
    let update = scheduler.update(&plan, &StepOutput::from_ids(vec![Some(8)]));
    assert_eq!(update.num_prompt_tokens, 0);
    assert_eq!(update.finished.len(), 1);
    assert_eq!(update.finished[0].output_token_ids(), &[7, 8]);
    assert!(update.tokens[0].1.is_last, "max_tokens reached: the last token says so");
    assert_eq!(scheduler.kv().num_used_blocks(), 0);
}

#[test]
fn chunks_before_the_sampling_step_are_not_affected() {
    let mut scheduler = scheduler(4);
    scheduler.add(sequence(1, 10, stop(1)));
    let mut num_computed = Vec::new();
    for _ in 0..4 {
        let plan = scheduler.schedule();
        let rows = vec![None; plan.num_sampled()];
        num_computed.push(
            scheduler
                .update(&plan, &StepOutput::from_ids(rows))
                .num_computed_tokens,
        );
    }
    // Chunks of 4, 4, then the last 2 tokens with a row not ready (1 computed), then 1 again.
    assert_eq!(num_computed, vec![4, 4, 1, 0]);
    assert_eq!(step(&mut scheduler, |_| Some(7)).len(), 1);
}
