//! The CPU paged KV cache and its attention: the CPU implementation, against which the CUDA
//! kernels are tested (`tests/gpu/kernels.rs`).
//!
//! Layout per layer: `[num_blocks, block_size, num_kv_heads, head_dim]`, f32. Attention reads
//! keys and values in place through the block table; a sequence's cache is never copied.

use candle_core::{Device, Tensor};
use rayon::prelude::*;

use super::metadata::AttnMetadata;
use super::paged_cache::PagedKvCache;
use super::shape::AttnShape;
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

    /// One layer's keys and values, `[num_blocks, block_size, num_kv_heads, head_dim]`.
    #[cfg(feature = "testing")]
    pub fn layer(&self, layer: usize) -> (&[f32], &[f32]) {
        (&self.keys[layer], &self.values[layer])
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

    #[cfg(feature = "testing")]
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

/// Query tokens of one sequence attended together: each key and value is read once per tile.
const QUERY_TILE: usize = 16;

/// Consecutive query tokens of one sequence.
#[derive(Debug, Clone, Copy)]
struct Tile {
    seq: usize,
    /// Position of the tile's first token in its sequence.
    first_position: usize,
    num_tokens: usize,
}

/// Causal attention of every query token over its sequence's cached context (which already holds
/// this step's keys and values). `q` is `[num_tokens, num_heads, head_dim]`.
pub fn paged_attention(q: &[f32], cache: &CacheView<'_>, meta: &AttnMetadata) -> Vec<f32> {
    let q_row = cache.shape.num_heads * cache.shape.head_dim;
    let mut out = vec![0.0f32; q.len()];
    // Each sequence's slots, in position order, resolved once through its block table.
    let seq_slots: Vec<Vec<usize>> = (0..meta.num_seqs())
        .map(|seq| {
            (0..meta.seq_lens[seq] as usize)
                .map(|p| meta.slot(seq, p))
                .collect()
        })
        .collect();
    let tiles = tiles(meta);
    let mut out_chunks = Vec::with_capacity(tiles.len());
    let mut q_chunks = Vec::with_capacity(tiles.len());
    let (mut out_rest, mut q_rest) = (out.as_mut_slice(), q);
    for tile in &tiles {
        let (out_tile, out_tail) = out_rest.split_at_mut(tile.num_tokens * q_row);
        let (q_tile, q_tail) = q_rest.split_at(tile.num_tokens * q_row);
        out_chunks.push(out_tile);
        q_chunks.push(q_tile);
        (out_rest, q_rest) = (out_tail, q_tail);
    }
    out_chunks
        .into_par_iter()
        .zip(q_chunks.into_par_iter())
        .zip(tiles.par_iter())
        .for_each_init(Vec::new, |scores, ((out, q), tile)| {
            let window = meta.first_attended(tile.first_position);
            let last = tile.first_position + tile.num_tokens - 1;
            let slots = &seq_slots[tile.seq][window..=last];
            let view = TileView {
                q,
                slots,
                first_key_position: window,
                first_position: tile.first_position,
                meta,
            };
            attend_tile(&view, out, cache, scores);
        });
    out
}

/// Splits every sequence's query tokens into tiles, in token order.
fn tiles(meta: &AttnMetadata) -> Vec<Tile> {
    let mut tiles = Vec::new();
    for seq in 0..meta.num_seqs() {
        let num_new = (meta.query_start_loc[seq + 1] - meta.query_start_loc[seq]) as usize;
        let first_position = meta.seq_lens[seq] as usize - num_new;
        let mut start = 0;
        while start < num_new {
            let num_tokens = (num_new - start).min(QUERY_TILE);
            tiles.push(Tile {
                seq,
                first_position: first_position + start,
                num_tokens,
            });
            start += num_tokens;
        }
    }
    tiles
}

/// One tile's inputs: its queries and the slots of positions `first_key_position..`.
struct TileView<'a> {
    q: &'a [f32],
    slots: &'a [usize],
    first_key_position: usize,
    first_position: usize,
    meta: &'a AttnMetadata,
}

/// Picks the widest vector code the CPU runs.
fn attend_tile(view: &TileView<'_>, out: &mut [f32], cache: &CacheView<'_>, scores: &mut Vec<f32>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            simd::attend_tile_avx2(view, out, cache, scores);
            return;
        }
    }
    attend_tile_portable(view, out, cache, scores);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod simd {
    use super::{attend_tile_portable, CacheView, TileView};

    #[target_feature(enable = "avx2,fma")]
    fn attend_avx2(
        view: &TileView<'_>,
        out: &mut [f32],
        cache: &CacheView<'_>,
        scores: &mut Vec<f32>,
    ) {
        attend_tile_portable(view, out, cache, scores);
    }

    pub(super) fn attend_tile_avx2(
        view: &TileView<'_>,
        out: &mut [f32],
        cache: &CacheView<'_>,
        scores: &mut Vec<f32>,
    ) {
        // SAFETY: the caller checked at run time that the CPU has AVX2 and FMA, the only
        // requirement of a `target_feature` function; the body is safe Rust.
        unsafe { attend_avx2(view, out, cache, scores) }
    }
}

/// Softmax-weighted sums of values for every head of every token of a tile. Query heads that
/// share a KV head (GQA) and the tile's tokens are handled together, so each key and value is
/// read once per tile. Scores outside a token's causal (and sliding) window stay at zero weight.
#[inline(always)]
fn attend_tile_portable(
    view: &TileView<'_>,
    out: &mut [f32],
    cache: &CacheView<'_>,
    scores: &mut Vec<f32>,
) {
    let AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    } = cache.shape;
    let group = cache.shape.group_size();
    let kv_row = num_kv_heads * head_dim;
    let span = view.slots.len();
    let num_tokens = view.q.len() / (num_heads * head_dim);
    let scale = 1.0 / (head_dim as f32).sqrt();
    scores.resize(num_tokens * group * span, 0.0);
    // Key range of token i (relative to the tile's first key): lo..=hi.
    let range = |i: usize| {
        let position = view.first_position + i;
        (
            view.meta.first_attended(position) - view.first_key_position,
            position - view.first_key_position,
        )
    };
    for kv_head in 0..num_kv_heads {
        let kv_offset = kv_head * head_dim;
        for (j, &slot) in view.slots.iter().enumerate() {
            let key = &cache.keys[slot * kv_row + kv_offset..][..head_dim];
            for i in 0..num_tokens {
                let (lo, hi) = range(i);
                for g in 0..group {
                    let row = (i * group + g) * span;
                    scores[row + j] = if j < lo || j > hi {
                        f32::NEG_INFINITY
                    } else {
                        let head = kv_head * group + g;
                        dot(
                            &view.q[(i * num_heads + head) * head_dim..][..head_dim],
                            key,
                        ) * scale
                    };
                }
            }
        }
        for row in scores.chunks_exact_mut(span) {
            softmax_in_place(row);
        }
        for (j, &slot) in view.slots.iter().enumerate() {
            let value = &cache.values[slot * kv_row + kv_offset..][..head_dim];
            for i in 0..num_tokens {
                let (lo, hi) = range(i);
                if j < lo || j > hi {
                    continue;
                }
                for g in 0..group {
                    let head = kv_head * group + g;
                    let weight = scores[(i * group + g) * span + j];
                    axpy(
                        weight,
                        value,
                        &mut out[(i * num_heads + head) * head_dim..][..head_dim],
                    );
                }
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
