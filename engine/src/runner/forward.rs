//! One forward pass of a plan: attention metadata, model inputs, the KV cache's step, the model
//! (with the pool's workers polling for small CPU steps). Used for the target model and for
//! speculative decoding's draft model.

use candle_core::Tensor;

use super::{input, polling};
use crate::attention::{AttnMetadata, PagedKvCache};
use crate::batch::BatchPlan;
use crate::error::Result;
use crate::models::CausalLm;

/// `[sampling rows, vocab]` logits on the model's device (`None` for an empty plan).
pub(super) fn forward(
    model: &dyn CausalLm,
    kv_cache: &mut dyn PagedKvCache,
    block_size: usize,
    plan: &BatchPlan,
) -> Result<Option<Tensor>> {
    if plan.is_empty() {
        return Ok(None);
    }
    let meta = AttnMetadata::from_plan(plan, block_size);
    let input = input::build_model_input(plan, &meta, model.device())?;
    kv_cache.begin_step(&meta)?;
    let logits = if model.device().is_cpu() && polling::worth_polling(meta.positions.len()) {
        polling::with_workers_polling(|| model.forward(&input, &meta, kv_cache))?
    } else {
        model.forward(&input, &meta, kv_cache)?
    };
    Ok(Some(logits))
}
