//! What the reference-parity tests share: the fixtures of `tests/fixtures/families/`, their
//! reference logits, our logits for whole prompts (alone or in one mixed step, with or without
//! LoRA adapters) and the comparison of the two.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{Device, Tensor};
use pagoda_engine::attention::{AttnMetadata, CpuKvCache};
use pagoda_engine::batch::{BatchPlan, ScheduledSeq};
use pagoda_engine::kv::BlockId;
use pagoda_engine::models::{load_model, CausalLm, WeightFormat};
use pagoda_engine::runner::input::build_model_input;
use pagoda_engine::{LoraAdapter, RequestId};

pub const BLOCK_SIZE: usize = 4;

pub fn fixture(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/families")
        .join(family)
}

/// One reference file: per prompt, the tokens fed and the logits after each.
pub struct Reference {
    pub prompts: Vec<(Vec<u32>, Vec<Vec<f32>>)>,
}

impl Reference {
    pub fn read(path: &Path) -> Self {
        let tensors: HashMap<String, Tensor> =
            candle_core::safetensors::load(path, &Device::Cpu).unwrap();
        let prompts = (0..)
            .map_while(|i| {
                let tokens = tensors.get(&format!("p{i}.tokens"))?;
                let logits = &tensors[&format!("p{i}.logits")];
                let tokens: Vec<u32> = tokens
                    .to_vec1::<i64>()
                    .unwrap()
                    .into_iter()
                    .map(|t| t as u32)
                    .collect();
                Some((tokens, logits.to_vec2::<f32>().unwrap()))
            })
            .collect::<Vec<_>>();
        assert_eq!(prompts.len(), 3, "{}", path.display());
        Self { prompts }
    }

    /// The prompt's length: the tokens fed minus the 8 greedy ones.
    pub fn prompt_len(&self, prompt: usize) -> usize {
        self.prompts[prompt].0.len() - 8
    }
}

pub fn max_abs(values: &[f32]) -> f32 {
    values.iter().fold(0.0f32, |m, v| m.max(v.abs()))
}

pub fn argmax(values: &[f32]) -> (usize, f32) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    (order[0], values[order[0]] - values[order[1]])
}

/// Compares our rows with the reference's; returns the max |Δ| relative to the largest
/// reference logit, after checking the greedy choice on every row where it is clear.
pub fn compare(what: &str, ours: &[Vec<f32>], reference: &[Vec<f32>], margin: f32) -> f32 {
    assert_eq!(ours.len(), reference.len(), "{what}: rows");
    let scale = reference.iter().map(|r| max_abs(r)).fold(1.0f32, f32::max);
    let mut worst = 0.0f32;
    for (row, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert_eq!(a.len(), b.len(), "{what}: vocabulary");
        let diff = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        worst = worst.max(diff / scale);
        let (want, clearness) = argmax(b);
        if clearness > margin * scale {
            assert_eq!(argmax(a).0, want, "{what}: greedy token of row {row}");
        }
    }
    worst
}

pub fn cache_for(model: &dyn CausalLm, num_tokens: usize) -> CpuKvCache {
    let cfg = model.config();
    CpuKvCache::new(
        cfg.num_layers,
        cfg.attn_shape(),
        BLOCK_SIZE,
        num_tokens.div_ceil(BLOCK_SIZE) + 2,
    )
}

pub fn seq(id: u64, computed: usize, tokens: &[u32], table: &[u32]) -> ScheduledSeq {
    ScheduledSeq {
        id: RequestId(id),
        num_computed_tokens: computed,
        new_token_ids: tokens.to_vec(),
        num_draft_tokens: 0,
        block_table: table.iter().copied().map(BlockId).collect(),
        sample: true,
        lora: None,
        prompt_logprobs: None,
    }
}

/// One prefill of all of a prompt's tokens (teacher-forced), logits at every position.
pub fn prefill_rows(model: &dyn CausalLm, tokens: &[u32]) -> Vec<Vec<f32>> {
    prefill_batch(model, &[(tokens, None)]).remove(0)
}

/// One step prefilling every sequence whole, each with its adapter (or none), logits at every
/// position of each.
pub fn prefill_batch(
    model: &dyn CausalLm,
    seqs: &[(&[u32], Option<Arc<LoraAdapter>>)],
) -> Vec<Vec<Vec<f32>>> {
    let total: usize = seqs
        .iter()
        .map(|(tokens, _)| tokens.len().div_ceil(BLOCK_SIZE) * BLOCK_SIZE)
        .sum();
    let mut cache = cache_for(model, total);
    let mut next_block = 1u32;
    let mut scheduled = Vec::new();
    for (i, (tokens, lora)) in seqs.iter().enumerate() {
        let num_blocks = tokens.len().div_ceil(BLOCK_SIZE) as u32;
        // Physical blocks in reverse order: logical order differs from physical.
        let table: Vec<u32> = (next_block..next_block + num_blocks).rev().collect();
        next_block += num_blocks;
        scheduled.push(ScheduledSeq {
            lora: lora.clone(),
            ..seq(i as u64 + 1, 0, tokens, &table)
        });
    }
    let plan = BatchPlan {
        seqs: scheduled,
        num_batched_tokens: seqs.iter().map(|(tokens, _)| tokens.len()).sum(),
    };
    let meta = AttnMetadata::from_plan(&plan, BLOCK_SIZE);
    let mut input = build_model_input(&plan, &meta, &Device::Cpu).unwrap();
    let num_tokens = plan.num_batched_tokens as u32;
    input.logits_indices = Tensor::arange(0u32, num_tokens, &Device::Cpu).unwrap();
    let rows = model
        .forward(&input, &meta, &mut cache)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    let mut rows = rows.into_iter();
    seqs.iter()
        .map(|(tokens, _)| rows.by_ref().take(tokens.len()).collect())
        .collect()
}

pub fn load(path: &Path, format: WeightFormat) -> Box<dyn CausalLm> {
    load_model(path, &Device::Cpu, format).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every prompt alone, every row: the worst relative error against `reference`.
pub fn alone(what: &str, model: &dyn CausalLm, reference: &Reference, margin: f32) -> f32 {
    reference
        .prompts
        .iter()
        .enumerate()
        .map(|(i, (tokens, logits))| {
            compare(
                &format!("{what} prompt {i}"),
                &prefill_rows(model, tokens),
                logits,
                margin,
            )
        })
        .fold(0.0, f32::max)
}
