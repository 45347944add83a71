//! Builds a step's model inputs (token ids, positions, logits rows) from a plan.

use candle_core::{Device, Tensor};

use crate::attention::AttnMetadata;
use crate::batch::BatchPlan;
use crate::error::Result;
use crate::lora::batch::LoraBatch;
use crate::models::ModelInput;

/// Token ids and positions of every scheduled token, which rows produce logits (the last token
/// of each sequence that samples, with one row before it per proposed token it verifies, then the
/// prompt log-probability rows) and which rows use which LoRA adapter.
pub fn build_model_input(
    plan: &BatchPlan,
    meta: &AttnMetadata,
    device: &Device,
) -> Result<ModelInput> {
    let token_ids: Vec<u32> = plan
        .seqs
        .iter()
        .flat_map(|s| s.new_token_ids.iter().copied())
        .collect();
    // A sampling sequence's rows: its last token's, after the rows of its proposed tokens'
    // predecessors (the last `1 + num_draft_tokens` positions).
    let mut logits_indices: Vec<u32> = plan
        .seqs
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            let end = meta.query_start_loc[i + 1];
            (end - s.num_sampling_rows() as u32)..end
        })
        .collect();
    for (i, seq) in plan.seqs.iter().enumerate() {
        if let Some(rows) = &seq.prompt_logprobs {
            let first = meta.query_start_loc[i] + rows.first_row as u32;
            logits_indices.extend((0..rows.target_ids.len() as u32).map(|k| first + k));
        }
    }
    let num_tokens = token_ids.len();
    let num_sampled = logits_indices.len();
    let lora = if plan.seqs.iter().any(|s| s.lora.is_some()) {
        let ranges: Vec<_> = (0..plan.seqs.len())
            .map(|i| meta.query_start_loc[i] as usize..meta.query_start_loc[i + 1] as usize)
            .collect();
        let adapters: Vec<_> = plan.seqs.iter().map(|s| s.lora.as_ref()).collect();
        LoraBatch::new(&ranges, &adapters, num_tokens, device)?
    } else {
        LoraBatch::default()
    };
    Ok(ModelInput {
        token_ids: Tensor::from_vec(token_ids, num_tokens, device)?,
        positions: Tensor::from_vec(meta.positions.clone(), num_tokens, device)?,
        logits_indices: Tensor::from_vec(logits_indices, num_sampled, device)?,
        lora,
    })
}
