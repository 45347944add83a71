//! Drives the scheduler and the model runner step by step (no engine thread) and checks the block
//! accounting invariants after every step: free + used == total, reference counts equal the
//! number of block tables holding each block, and every block is free once all requests end.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use candle_core::Device;
use common::*;
use pagoda_engine::attention::CpuKvCache;
use pagoda_engine::batch::BatchPlan;
use pagoda_engine::kv::{BlockHash, CacheScope, KvCacheManager};
use pagoda_engine::models::{load_model, WeightFormat};
use pagoda_engine::runner::{ModelRunner, StepExecutor};
use pagoda_engine::scheduler::{Scheduler, SchedulerLimits};
use pagoda_engine::sequence::Sequence;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{EngineRequest, RequestId, SamplingParams, StopConditions};

const BLOCK_SIZE: usize = 4;

fn setup(num_blocks: usize, max_num_batched_tokens: usize) -> (TinyModel, Scheduler, ModelRunner) {
    setup_with(
        KvCacheManager::new(num_blocks, BLOCK_SIZE, true),
        max_num_batched_tokens,
    )
}

fn setup_with(
    kv: KvCacheManager,
    max_num_batched_tokens: usize,
) -> (TinyModel, Scheduler, ModelRunner) {
    let num_blocks = kv.num_blocks();
    let spec = TinyLlamaSpec::default();
    let model_file = tiny_model(&spec);
    let model = load_model(&model_file.path, &Device::Cpu, WeightFormat::F32).unwrap();
    let cfg = model.config().clone();
    let cache = CpuKvCache::new(cfg.num_layers, cfg.attn_shape(), BLOCK_SIZE, num_blocks);
    let limits = SchedulerLimits {
        max_num_seqs: 8,
        max_num_batched_tokens,
        max_model_len: 100,
        enable_chunked_prefill: true,
        max_loras: None,
    };
    let scheduler = Scheduler::new(limits, kv, vec![]);
    (
        model_file,
        scheduler,
        ModelRunner::new(model, Box::new(cache), BLOCK_SIZE),
    )
}

fn sequence(id: u64, prompt: Vec<u32>, max_tokens: usize) -> Sequence {
    let stop = StopConditions {
        max_tokens: Some(max_tokens),
        ignore_eos: true,
        ..StopConditions::default()
    };
    Sequence::new(
        EngineRequest::new(RequestId(id), prompt, sampling(id), stop),
        max_tokens,
    )
}

/// Every sequence here samples greedily, seeded by its id (the seed the engine would resolve).
fn sampling(id: u64) -> SamplingParams {
    SamplingParams {
        seed: Some(id),
        ..SamplingParams::greedy()
    }
}

/// Tells the runner's sampler about the sequences it has not seen yet, as the engine does at
/// admission (greedy, `ignore_eos`, as `sequence` makes them).
fn admit_new(runner: &mut ModelRunner, plan: &BatchPlan, known: &mut BTreeSet<RequestId>) {
    for scheduled in &plan.seqs {
        if known.insert(scheduled.id) {
            let stop = StopConditions {
                ignore_eos: true,
                ..StopConditions::default()
            };
            let request =
                EngineRequest::new(scheduled.id, Vec::new(), sampling(scheduled.id.0), stop);
            StepExecutor::add_request(runner, &request, usize::MAX);
        }
    }
}

/// Runs steps until nothing is left (or `max_steps`), checking invariants after each; calls
/// `between` before every step. Returns the number of finished sequences.
fn run_steps(
    scheduler: &mut Scheduler,
    runner: &mut ModelRunner,
    max_steps: usize,
    mut between: impl FnMut(&mut Scheduler, usize),
) -> usize {
    run_steps_collecting(scheduler, runner, max_steps, &mut between).len()
}

/// As `run_steps`, returning the finished sequences' output tokens by request id.
fn run_steps_collecting(
    scheduler: &mut Scheduler,
    runner: &mut ModelRunner,
    max_steps: usize,
    mut between: impl FnMut(&mut Scheduler, usize),
) -> std::collections::BTreeMap<u64, Vec<u32>> {
    let mut finished = std::collections::BTreeMap::new();
    let mut known = BTreeSet::new();
    for step in 0..max_steps {
        between(scheduler, step);
        if !scheduler.has_work() {
            break;
        }
        let plan = scheduler.schedule();
        assert!(plan.num_batched_tokens <= scheduler.limits().max_num_batched_tokens);
        assert!(plan.seqs.len() <= scheduler.limits().max_num_seqs);
        admit_new(runner, &plan, &mut known);
        let output = StepExecutor::execute(runner, &plan).unwrap();
        assert_eq!(output.num_rows(), plan.num_sampled());
        for seq in scheduler.update(&plan, &output).finished {
            finished.insert(seq.id.0, seq.output_token_ids().to_vec());
        }
        scheduler
            .check_invariants()
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
    }
    finished
}

#[test]
fn invariants_hold_after_every_step_through_chunking_and_preemption() {
    // 30 blocks of 4 tokens; 10 requests of up to 60 + 20 tokens force preemptions.
    let (_model, mut scheduler, mut runner) = setup(30, 16);
    for (i, prompt) in random_prompts(10, 60, 256, 3).into_iter().enumerate() {
        scheduler.add(sequence(i as u64, prompt, 20));
    }
    let num_finished = run_steps(&mut scheduler, &mut runner, 10_000, |_, _| {});
    assert_eq!(num_finished, 10);
    assert!(
        scheduler.num_preemptions_total() > 0,
        "expected preemptions with 30 blocks"
    );
    assert_eq!(
        scheduler.kv().num_free_blocks(),
        scheduler.kv().num_blocks()
    );
}

#[test]
fn aborting_mid_way_returns_every_block() {
    let (_model, mut scheduler, mut runner) = setup(64, 8);
    for (i, prompt) in random_prompts(6, 40, 256, 5).into_iter().enumerate() {
        scheduler.add(sequence(i as u64, prompt, 30));
    }
    // Abort one request per step from step 3 on: mid-prefill, mid-decode and still waiting ones.
    run_steps(&mut scheduler, &mut runner, 10_000, |scheduler, step| {
        if (3..9).contains(&step) {
            let aborted = scheduler.abort(RequestId((step - 3) as u64));
            assert!(
                aborted.is_some(),
                "request {} should still be live at step {step}",
                step - 3
            );
            scheduler.check_invariants().unwrap();
        }
    });
    assert!(!scheduler.has_work());
    assert_eq!(scheduler.kv().num_used_blocks(), 0);
}

#[test]
fn latest_arrival_is_the_preemption_victim() {
    // Two sequences that each fit alone but not together once they grow.
    let (_model, mut scheduler, mut runner) = setup(6, 64);
    scheduler.add(sequence(1, vec![5; 10], 12));
    scheduler.add(sequence(2, vec![6; 10], 12));
    let mut first_preempted = None;
    run_steps(&mut scheduler, &mut runner, 1000, |scheduler, _| {
        if first_preempted.is_none() && scheduler.num_preemptions_total() > 0 {
            first_preempted = Some(scheduler.waiting_ids());
        }
    });
    assert_eq!(
        scheduler.num_preemptions_total(),
        1,
        "exactly one preemption expected"
    );
    assert_eq!(
        first_preempted,
        Some(vec![RequestId(2)]),
        "the later arrival must be preempted"
    );
}

/// Prompts drawn from a few shared 24-token prefixes plus unique tails.
fn shared_prefix_prompts() -> Vec<Vec<u32>> {
    let prefixes = random_prompts(3, 24, 256, 21).into_iter().map(|mut p| {
        p.resize(24, 7);
        p
    });
    let prefixes: Vec<Vec<u32>> = prefixes.collect();
    random_prompts(12, 20, 256, 22)
        .into_iter()
        .enumerate()
        .map(|(i, tail)| [prefixes[i % 3].clone(), tail].concat())
        .collect()
}

fn outputs_with(kv: KvCacheManager) -> (std::collections::BTreeMap<u64, Vec<u32>>, u64, u64) {
    let (_model, mut scheduler, mut runner) = setup_with(kv, 16);
    for (i, prompt) in shared_prefix_prompts().into_iter().enumerate() {
        scheduler.add(sequence(i as u64, prompt, 10));
    }
    let outputs = run_steps_collecting(&mut scheduler, &mut runner, 10_000, |_, _| {});
    assert_eq!(scheduler.kv().num_used_blocks(), 0);
    (
        outputs,
        scheduler.prefix_cache_counters().num_hit_tokens,
        scheduler.kv().num_evictions(),
    )
}

#[test]
fn prefix_sharing_with_eviction_keeps_invariants_and_outputs() {
    let (expected, no_hits, _) = outputs_with(KvCacheManager::new(200, BLOCK_SIZE, false));
    assert_eq!(no_hits, 0);
    // 24 blocks: requests share prefix blocks, get preempted and evict cached blocks.
    let (outputs, hits, evictions) = outputs_with(KvCacheManager::new(24, BLOCK_SIZE, true));
    assert_eq!(outputs, expected);
    assert!(hits > 0, "shared prefixes should hit");
    assert!(evictions > 0, "24 blocks should force evictions");
}

#[test]
fn a_colliding_hash_function_never_corrupts_outputs() {
    fn constant(_: Option<BlockHash>, _: &[u32], _: &CacheScope) -> BlockHash {
        BlockHash(1)
    }
    let (expected, _, _) = outputs_with(KvCacheManager::new(200, BLOCK_SIZE, false));
    let (outputs, _, _) =
        outputs_with(KvCacheManager::with_hasher(200, BLOCK_SIZE, true, constant));
    assert_eq!(outputs, expected);
}
