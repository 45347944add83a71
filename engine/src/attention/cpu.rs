//! The CPU paged KV cache and its attention: the reference path and the test oracle.
//!
//! Layout per layer: `[num_blocks, block_size, num_kv_heads, head_dim]`, f32. Attention reads
//! keys and values in place through the block table; a sequence's cache is never copied.

use candle_core::{Device, Tensor};
use rayon::prelude::*;

use super::{AttnMetadata, AttnShape, PagedKvCache};
use crate::error::{EngineError, Result};

#[derive(Debug)]
pub struct CpuKvCache {
    shape: AttnShape,
    block_size: usize,
    num_blocks: usize,
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
}

impl CpuKvCache {
    pub fn new(num_layers: usize, shape: AttnShape, block_size: usize, num_blocks: usize) -> Self {
        let len = num_blocks * block_size * shape.num_kv_heads * shape.head_dim;
        Self {
            shape,
            block_size,
            num_blocks,
            keys: (0..num_layers).map(|_| vec![0.0; len]).collect(),
            values: (0..num_layers).map(|_| vec![0.0; len]).collect(),
        }
    }

    /// Bytes one token takes across all layers (keys and values).
    pub fn bytes_per_token(num_layers: usize, shape: AttnShape) -> usize {
        2 * num_layers * shape.num_kv_heads * shape.head_dim * std::mem::size_of::<f32>()
    }

    fn write(&mut self, layer: usize, k: &[f32], v: &[f32], slot_mapping: &[u32]) -> Result<()> {
        let row = self.shape.num_kv_heads * self.shape.head_dim;
        let num_slots = self.num_blocks * self.block_size;
        for (token, &slot) in slot_mapping.iter().enumerate() {
            let slot = slot as usize;
            if slot >= num_slots {
                return Err(EngineError::Execution(format!(
                    "slot {slot} out of range {num_slots}"
                )));
            }
            let src = token * row..(token + 1) * row;
            self.keys[layer][slot * row..(slot + 1) * row].copy_from_slice(&k[src.clone()]);
            self.values[layer][slot * row..(slot + 1) * row].copy_from_slice(&v[src]);
        }
        Ok(())
    }
}

impl PagedKvCache for CpuKvCache {
    fn attend(
        &mut self,
        layer: usize,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        meta: &AttnMetadata,
    ) -> Result<Tensor> {
        let num_tokens = meta.num_tokens();
        let k = k.flatten_all()?.to_vec1::<f32>()?;
        let v = v.flatten_all()?.to_vec1::<f32>()?;
        let q = q.flatten_all()?.to_vec1::<f32>()?;
        let expected = num_tokens * self.shape.num_heads * self.shape.head_dim;
        if q.len() != expected
            || k.len() != num_tokens * self.shape.num_kv_heads * self.shape.head_dim
        {
            return Err(EngineError::Execution(format!(
                "attention input sizes q={} k={} do not match {num_tokens} tokens",
                q.len(),
                k.len()
            )));
        }
        self.write(layer, &k, &v, &meta.slot_mapping)?;
        let cache = CacheView {
            keys: &self.keys[layer],
            values: &self.values[layer],
            shape: self.shape,
        };
        let out = paged_attention(&q, &cache, meta);
        Ok(Tensor::from_vec(
            out,
            (num_tokens, expected / num_tokens.max(1)),
            &Device::Cpu,
        )?)
    }

    fn num_blocks(&self) -> usize {
        self.num_blocks
    }
}

/// One layer's cache, read-only.
#[derive(Debug, Clone, Copy)]
pub struct CacheView<'a> {
    pub keys: &'a [f32],
    pub values: &'a [f32],
    pub shape: AttnShape,
}

/// Causal attention of every query token over its sequence's cached context (which already holds
/// this step's keys and values). `q` is `[num_tokens, num_heads, head_dim]`.
pub fn paged_attention(q: &[f32], cache: &CacheView<'_>, meta: &AttnMetadata) -> Vec<f32> {
    let shape = cache.shape;
    let q_row = shape.num_heads * shape.head_dim;
    let mut out = vec![0.0f32; q.len()];
    // Each sequence's slots, in position order, resolved once through its block table.
    let seq_slots: Vec<Vec<usize>> = (0..meta.num_seqs())
        .map(|seq| {
            (0..meta.seq_lens[seq] as usize)
                .map(|p| meta.slot(seq, p))
                .collect()
        })
        .collect();
    let token_seq = token_to_seq(meta);
    out.par_chunks_mut(q_row)
        .zip(q.par_chunks(q_row))
        .zip(token_seq.par_iter())
        .for_each_init(Vec::new, |scores, ((out_row, q_row), &(seq, position))| {
            let first = meta.first_attended(position);
            attend_one_token(
                q_row,
                out_row,
                cache,
                &seq_slots[seq][first..=position],
                scores,
            );
        });
    out
}

/// For each token: (sequence index, position in the sequence).
fn token_to_seq(meta: &AttnMetadata) -> Vec<(usize, usize)> {
    let mut result = Vec::with_capacity(meta.num_tokens());
    for seq in 0..meta.num_seqs() {
        let start = meta.query_start_loc[seq] as usize;
        let end = meta.query_start_loc[seq + 1] as usize;
        let first_position = meta.seq_lens[seq] as usize - (end - start);
        result.extend((0..end - start).map(|i| (seq, first_position + i)));
    }
    result
}

/// Picks the widest vector code the CPU runs for one token's attention.
fn attend_one_token(
    q: &[f32],
    out: &mut [f32],
    cache: &CacheView<'_>,
    slots: &[usize],
    scores: &mut Vec<f32>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            simd::attend_one_token_avx2(q, out, cache, slots, scores);
            return;
        }
    }
    attend_one_token_portable(q, out, cache, slots, scores);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod simd {
    use super::CacheView;

    #[target_feature(enable = "avx2,fma")]
    fn attend_avx2(
        q: &[f32],
        out: &mut [f32],
        cache: &CacheView<'_>,
        slots: &[usize],
        scores: &mut Vec<f32>,
    ) {
        super::attend_one_token_portable(q, out, cache, slots, scores);
    }

    pub(super) fn attend_one_token_avx2(
        q: &[f32],
        out: &mut [f32],
        cache: &CacheView<'_>,
        slots: &[usize],
        scores: &mut Vec<f32>,
    ) {
        // SAFETY: the caller checked at run time that the CPU has AVX2 and FMA, the only
        // requirement of a `target_feature` function; the body is safe Rust.
        unsafe { attend_avx2(q, out, cache, slots, scores) }
    }
}

/// Softmax-weighted sum of values over `slots`, for every head of one token. The query heads
/// that share a KV head (GQA) are handled together, so each key and value is read once.
#[inline(always)]
fn attend_one_token_portable(
    q: &[f32],
    out: &mut [f32],
    cache: &CacheView<'_>,
    slots: &[usize],
    scores: &mut Vec<f32>,
) {
    let AttnShape {
        num_kv_heads,
        head_dim,
        ..
    } = cache.shape;
    let group = cache.shape.group_size();
    let kv_row = num_kv_heads * head_dim;
    let len = slots.len();
    let scale = 1.0 / (head_dim as f32).sqrt();
    scores.resize(group * len, 0.0);
    for kv_head in 0..num_kv_heads {
        let kv_offset = kv_head * head_dim;
        let heads = kv_head * group..(kv_head + 1) * group;
        for (j, &slot) in slots.iter().enumerate() {
            let key = &cache.keys[slot * kv_row + kv_offset..][..head_dim];
            for (g, head) in heads.clone().enumerate() {
                scores[g * len + j] = dot(&q[head * head_dim..][..head_dim], key) * scale;
            }
        }
        for g in 0..group {
            softmax_in_place(&mut scores[g * len..(g + 1) * len]);
        }
        for (j, &slot) in slots.iter().enumerate() {
            let value = &cache.values[slot * kv_row + kv_offset..][..head_dim];
            for (g, head) in heads.clone().enumerate() {
                axpy(
                    scores[g * len + j],
                    value,
                    &mut out[head * head_dim..][..head_dim],
                );
            }
        }
    }
}

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (chunks_a, tail_a) = a.as_chunks::<8>();
    let (chunks_b, tail_b) = b.as_chunks::<8>();
    let mut sums = [0.0f32; 8];
    for (ca, cb) in chunks_a.iter().zip(chunks_b) {
        for i in 0..8 {
            sums[i] += ca[i] * cb[i];
        }
    }
    let tail: f32 = tail_a.iter().zip(tail_b).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

#[inline(always)]
fn axpy(weight: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += weight * xi;
    }
}

#[inline(always)]
fn softmax_in_place(values: &mut [f32]) {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in values.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in values.iter_mut() {
        *v /= sum;
    }
}
