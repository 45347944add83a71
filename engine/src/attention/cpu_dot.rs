//! The dot-product form of the CPU attention kernel, for decode and short tiles: each key and
//! value row of the tile's span is read (and widened) once and met by every query of the tile.

use super::cpu_tile::{CacheView, RowLoader, Scratch, TileView};
use super::softmax::softmax_in_place;
use super::kv_element::KvElement;
use super::shape::AttnShape;

/// Softmax-weighted sums of values for every head of every token of a tile. Query heads that
/// share a KV head (GQA) and the tile's tokens are handled together, so each key and value is
/// read (and widened) once per tile. Scores outside a token's causal (and sliding) window stay
/// at zero weight. Each row's log-sum-exp is left in `scratch.lse`.
#[inline(always)]
pub(super) fn attend<T: KvElement>(
    view: &TileView<'_>,
    out: &mut [f32],
    cache: &CacheView<'_, T>,
    scratch: &mut Scratch,
    loader: impl RowLoader,
) {
    let AttnShape {
        num_heads,
        head_dim,
        ..
    } = cache.shape;
    let group = cache.shape.group_size();
    let span = view.slots.len();
    let num_tokens = view.q.len() / (num_heads * head_dim);
    let Scratch {
        scores, row, lse, ..
    } = scratch;
    scores.resize(num_tokens * group * span, 0.0);
    row.resize(head_dim, 0.0);
    lse.resize(num_tokens * num_heads, 0.0);
    for kv_head in 0..cache.shape.num_kv_heads {
        score_keys(view, cache, kv_head, scores, row, loader);
        for (r, token_scores) in scores.chunks_exact_mut(span).enumerate() {
            let (i, g) = (r / group, r % group);
            lse[i * num_heads + kv_head * group + g] = softmax_in_place(token_scores);
        }
        sum_values(view, cache, kv_head, scores, row, out, loader);
    }
}

/// Scaled dot products of the queries of `kv_head`'s group with every key of the tile: row
/// `(i * group + g)` of `scores` holds token `i`, head `g` of the group.
#[inline(always)]
fn score_keys<T: KvElement>(
    view: &TileView<'_>,
    cache: &CacheView<'_, T>,
    kv_head: usize,
    scores: &mut [f32],
    scratch_row: &mut [f32],
    loader: impl RowLoader,
) {
    let AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    } = cache.shape;
    let group = cache.shape.group_size();
    let span = view.slots.len();
    let num_tokens = view.q.len() / (num_heads * head_dim);
    let scale = 1.0 / (head_dim as f32).sqrt();
    let kv_offset = kv_head * head_dim;
    for (j, &slot) in view.slots.iter().enumerate() {
        let stored = &cache.keys[slot * num_kv_heads * head_dim + kv_offset..][..head_dim];
        let key = loader.load(stored, scratch_row);
        for i in 0..num_tokens {
            let (lo, hi) = view.key_range(i);
            for g in 0..group {
                let row = (i * group + g) * span;
                scores[row + j] = if j < lo || j > hi {
                    f32::NEG_INFINITY
                } else {
                    let head = kv_head * group + g;
                    dot(&view.q[(i * num_heads + head) * head_dim..][..head_dim], key) * scale
                };
            }
        }
    }
}

/// Adds every value of the tile, weighted by `scores`, to the outputs of `kv_head`'s group.
#[inline(always)]
fn sum_values<T: KvElement>(
    view: &TileView<'_>,
    cache: &CacheView<'_, T>,
    kv_head: usize,
    scores: &[f32],
    scratch_row: &mut [f32],
    out: &mut [f32],
    loader: impl RowLoader,
) {
    let AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    } = cache.shape;
    let group = cache.shape.group_size();
    let span = view.slots.len();
    let num_tokens = view.q.len() / (num_heads * head_dim);
    let kv_offset = kv_head * head_dim;
    for (j, &slot) in view.slots.iter().enumerate() {
        let stored = &cache.values[slot * num_kv_heads * head_dim + kv_offset..][..head_dim];
        let value = loader.load(stored, scratch_row);
        for i in 0..num_tokens {
            let (lo, hi) = view.key_range(i);
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

