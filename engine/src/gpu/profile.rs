//! The profiling step: one forward pass of the largest step the scheduler may produce
//! (`max_num_batched_tokens` prompt tokens over up to `max_num_seqs` sequences, each sampling),
//! with the pool's peak measured around it.

use crate::attention::cuda::CudaKvCache;
use crate::batch::{BatchPlan, ScheduledSeq};
use crate::config::EngineConfig;
use crate::error::Result;
use crate::kv::block_pool::{num_blocks_for, BlockId};
use crate::kv::budget::{kv_budget, KvBudget, MemoryMeasurements};
use crate::models::CausalLm;
use crate::request::RequestId;
use crate::runner::ModelRunner;

use super::memory::{GpuMemory, MemoryProbe};

/// The worst-case step: as many sequences as may run at once, sharing the step's token budget
/// (none longer than `max_model_len`), each producing logits. Blocks are numbered from 0.
pub fn profile_plan(config: &EngineConfig, max_model_len: usize) -> (BatchPlan, usize) {
    let num_seqs = config
        .max_num_seqs
        .min(config.max_num_batched_tokens)
        .max(1);
    let num_tokens = config.max_num_batched_tokens.min(num_seqs * max_model_len);
    let mut seqs = Vec::with_capacity(num_seqs);
    let mut next_block = 0u32;
    for i in 0..num_seqs {
        let len = num_tokens / num_seqs + usize::from(i < num_tokens % num_seqs);
        if len == 0 {
            continue;
        }
        let num_blocks = num_blocks_for(len, config.block_size) as u32;
        seqs.push(ScheduledSeq {
            id: RequestId(i as u64),
            num_computed_tokens: 0,
            new_token_ids: vec![0; len],
            num_draft_tokens: 0,
            block_table: (next_block..next_block + num_blocks).map(BlockId).collect(),
            sample: true,
            lora: None,
            prompt_logprobs: None,
        });
        next_block += num_blocks;
    }
    let plan = BatchPlan {
        seqs,
        num_batched_tokens: num_tokens,
    };
    (plan, next_block as usize)
}

/// Runs the profiling step on `model` and splits `fraction` of the GPU; hands the model back.
pub fn kv_cache_budget(
    config: &EngineConfig,
    model: Box<dyn CausalLm>,
    probe: &MemoryProbe,
    at_start: &GpuMemory,
    fraction: f64,
) -> Result<(KvBudget, Box<dyn CausalLm>)> {
    let model_config = model.config().clone();
    let max_model_len = config.resolve_max_model_len(model_config.context_length)?;
    let (plan, num_blocks) = profile_plan(config, max_model_len);
    let weights_bytes = probe.snapshot()?.pool_used_bytes;
    probe.reset_peak()?;
    let shape = model_config.attn_shape();
    let cache = CudaKvCache::new(
        model.device(),
        model.dtype(),
        model_config.num_layers,
        shape,
        config.block_size,
        num_blocks,
    )?;
    let profile_cache_bytes =
        num_blocks * config.block_size * model_config.kv_bytes_per_token(model.dtype());
    let mut runner = ModelRunner::new(model, Box::new(cache), config.block_size);
    let started = std::time::Instant::now();
    runner.execute(&plan)?;
    let after = probe.snapshot()?;
    tracing::info!(
        num_tokens = plan.num_batched_tokens,
        num_seqs = plan.seqs.len(),
        elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
        "profiled the largest step"
    );
    let model = runner.into_model();
    let measurements = MemoryMeasurements {
        total_bytes: at_start.total_bytes,
        free_at_start_bytes: at_start.free_bytes,
        free_after_profile_bytes: after.free_bytes,
        pool_reserved_after_profile_bytes: after.pool_reserved_bytes,
        weights_bytes,
        peak_during_profile_bytes: after.pool_used_peak_bytes,
        profile_cache_bytes,
    };
    tracing::debug!(?measurements, "GPU memory measurements");
    Ok((kv_budget(fraction, &measurements)?, model))
}
