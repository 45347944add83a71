//! `Scheduler::schedule_within`: a step's prefill cap (the ITL budget) limits prefill chunks, and
//! never the decodes; `None` plans exactly as `schedule` does.

use super::{Scheduler, SchedulerLimits};
use crate::batch::BatchPlan;
use crate::kv::KvCacheManager;
use crate::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use crate::runner::StepOutput;
use crate::sequence::Sequence;

const BLOCK_SIZE: usize = 4;

fn scheduler(enable_chunked_prefill: bool) -> Scheduler {
    let limits = SchedulerLimits {
        max_num_seqs: 8,
        max_num_batched_tokens: 256,
        max_model_len: 512,
        enable_chunked_prefill,
        max_loras: None,
    };
    Scheduler::new(limits, KvCacheManager::new(256, BLOCK_SIZE, false), vec![2])
}

fn sequence(id: u64, num_prompt_tokens: usize) -> Sequence {
    let prompt = (0..num_prompt_tokens as u32).map(|t| 100 + t).collect();
    let stop = StopConditions {
        max_tokens: Some(64),
        ignore_eos: true,
        ..StopConditions::default()
    };
    Sequence::new(
        EngineRequest::new(RequestId(id), prompt, SamplingParams::greedy(), stop),
        64,
    )
}

/// Runs a plan, every sampling sequence choosing token 7.
fn run(scheduler: &mut Scheduler, plan: &BatchPlan) {
    let tokens = vec![Some(7); plan.num_sampled()];
    scheduler.update(plan, &StepOutput::from_ids(tokens));
    assert_eq!(scheduler.check_invariants(), Ok(()));
}

/// Each scheduled sequence's id and number of new tokens, in plan order.
fn shape(plan: &BatchPlan) -> Vec<(u64, usize)> {
    plan.seqs
        .iter()
        .map(|s| (s.id.0, s.new_token_ids.len()))
        .collect()
}

/// A scheduler with sequences 1 and 2 decoding.
fn with_two_decoding(enable_chunked_prefill: bool) -> Scheduler {
    let mut scheduler = scheduler(enable_chunked_prefill);
    scheduler.add(sequence(1, 8));
    scheduler.add(sequence(2, 8));
    let plan = scheduler.schedule();
    run(&mut scheduler, &plan);
    assert_eq!(scheduler.num_decoding(), 2);
    scheduler
}

#[test]
fn decodes_go_first_and_prefill_gets_only_the_cap() {
    let mut scheduler = with_two_decoding(true);
    scheduler.add(sequence(3, 100));
    let plan = scheduler.schedule_within(Some(16));
    assert_eq!(shape(&plan), [(1, 1), (2, 1), (3, 16)]);
    run(&mut scheduler, &plan);
    // The chunk continues, capped again, beside the decodes.
    let plan = scheduler.schedule_within(Some(30));
    assert_eq!(shape(&plan), [(1, 1), (2, 1), (3, 30)]);
    run(&mut scheduler, &plan);
    assert_eq!(scheduler.num_decoding(), 2, "3 is still in prefill");
}

#[test]
fn a_prefill_past_the_cap_does_not_hold_back_the_decodes_behind_it() {
    let mut scheduler = scheduler(true);
    scheduler.add(sequence(1, 100));
    scheduler.add(sequence(2, 1));
    scheduler.add(sequence(3, 8));
    // A one-token prompt costs what a decode does: admitted past the spent cap; 3 waits.
    let plan = scheduler.schedule_within(Some(20));
    assert_eq!(shape(&plan), [(1, 20), (2, 1)]);
    run(&mut scheduler, &plan);
    let plan = scheduler.schedule_within(Some(0));
    assert_eq!(shape(&plan), [(2, 1)], "1 is skipped, 2 behind it decodes");
}

#[test]
fn prefills_share_the_cap_in_order() {
    let mut scheduler = with_two_decoding(true);
    scheduler.add(sequence(3, 50));
    scheduler.add(sequence(4, 50));
    let plan = scheduler.schedule_within(Some(16));
    assert_eq!(shape(&plan), [(1, 1), (2, 1), (3, 16)], "4 waits behind 3");
    run(&mut scheduler, &plan);
    let plan = scheduler.schedule_within(Some(40));
    assert_eq!(shape(&plan), [(1, 1), (2, 1), (3, 34), (4, 6)]);
}

#[test]
fn every_sequence_completes_under_the_smallest_cap() {
    let mut scheduler = with_two_decoding(true);
    scheduler.add(sequence(3, 100));
    scheduler.add(sequence(4, 37));
    let mut num_steps = 0;
    while scheduler.has_work() {
        let plan = scheduler.schedule_within(Some(1));
        assert!(plan.seqs.iter().all(|s| s.new_token_ids.len() == 1));
        run(&mut scheduler, &plan);
        num_steps += 1;
        assert!(num_steps < 1000, "no progress");
    }
}

#[test]
fn no_cap_plans_as_before() {
    let plans = |cap: Option<usize>| {
        let mut scheduler = with_two_decoding(true);
        scheduler.add(sequence(3, 300));
        let mut shapes = Vec::new();
        for _ in 0..3 {
            let plan = match cap {
                Some(cap) => scheduler.schedule_within(Some(cap)),
                None => scheduler.schedule(),
            };
            shapes.push(shape(&plan));
            run(&mut scheduler, &plan);
        }
        shapes
    };
    let expected = vec![
        vec![(1, 1), (2, 1), (3, 254)],
        vec![(1, 1), (2, 1), (3, 46)],
        vec![(1, 1), (2, 1), (3, 1)],
    ];
    assert_eq!(plans(None), expected);
    assert_eq!(plans(Some(usize::MAX)), expected);
    assert_eq!(plans(Some(256)), expected);
}

#[test]
fn without_chunked_prefill_a_prompt_waits_for_a_cap_it_fits() {
    let mut scheduler = with_two_decoding(false);
    scheduler.add(sequence(3, 40));
    let plan = scheduler.schedule_within(Some(16));
    assert_eq!(shape(&plan), [(1, 1), (2, 1)]);
    run(&mut scheduler, &plan);
    let plan = scheduler.schedule_within(None);
    assert_eq!(shape(&plan), [(1, 1), (2, 1), (3, 40)]);
}
