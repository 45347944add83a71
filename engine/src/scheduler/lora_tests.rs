//! `max_loras`: admission passes over a sequence whose adapter would exceed the limit, keeps its
//! place, and admits it once the adapters running leave.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use super::*;
use crate::kv::hash::CacheScope;
use crate::lora::adapter::{LoraAdapter, LoraId};
use crate::request::{EngineRequest, SamplingParams, StopConditions};

fn adapter(id: u64) -> Arc<LoraAdapter> {
    Arc::new(LoraAdapter {
        id: LoraId(id),
        name: format!("adapter-{id}"),
        rank: 1,
        num_modules: 0,
        layers: Vec::new(),
    })
}

fn sequence(id: u64, lora: Option<Arc<LoraAdapter>>) -> Sequence {
    let mut request = EngineRequest::new(
        RequestId(id),
        vec![1, 2, 3],
        SamplingParams::greedy(),
        StopConditions::default(),
    );
    request.lora = lora;
    Sequence::new(request, 4)
}

fn scheduled_ids(plan: &BatchPlan) -> Vec<u64> {
    plan.seqs.iter().map(|s| s.id.0).collect()
}

#[test]
fn admission_keeps_at_most_max_loras_distinct_adapters_running() {
    let limits = SchedulerLimits {
        max_num_seqs: 8,
        max_num_batched_tokens: 64,
        max_model_len: 32,
        enable_chunked_prefill: true,
        max_loras: Some(2),
    };
    let mut scheduler = Scheduler::new(limits, KvCacheManager::new(32, 4, true), vec![0]);
    let (a, b, c) = (adapter(1), adapter(2), adapter(3));
    for (id, lora) in [
        (1, Some(&a)),
        (2, Some(&b)),
        (3, Some(&c)),
        (4, None),
        (5, Some(&a)),
    ] {
        scheduler.add(sequence(id, lora.cloned()));
    }
    let plan = scheduler.schedule();
    assert_eq!(scheduled_ids(&plan), [1, 2, 4, 5], "c would be a third adapter");
    assert_eq!(scheduler.num_waiting(), 1);
    let (running, waiting) = scheduler.lora_adapter_names();
    assert_eq!(running, ["adapter-1", "adapter-2"]);
    assert_eq!(waiting, ["adapter-3"]);
    assert_eq!(
        plan.seqs[0].lora.as_ref().map(|l| l.id()),
        Some(LoraId(1)),
        "the plan carries each sequence's adapter"
    );
    scheduler.abort(RequestId(2));
    let plan = scheduler.schedule();
    assert!(scheduled_ids(&plan).contains(&3), "c runs once b's sequence left");
    let scope = &scheduler.running.iter().find(|s| s.id == RequestId(3)).unwrap().cache_scope;
    assert_eq!(
        scope,
        &CacheScope {
            salt: None,
            lora: Some(LoraId(3))
        }
    );
}
