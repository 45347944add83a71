//! The CPU paged-attention kernel: every query token attends to its sequence's cached keys and
//! values through the block table, in place. Generic over the cache's element type: rows of f16
//! or bf16 are widened to f32 into a per-thread scratch row as they are read (`KvElement`), and
//! all arithmetic is f32.

use rayon::prelude::*;

use super::kv_element::{KvElement, X86Features};
use super::metadata::AttnMetadata;
use super::shape::AttnShape;

/// One layer's cache, read-only: `[num_blocks, block_size, num_kv_heads, head_dim]`.
#[derive(Debug, Clone, Copy)]
pub struct CacheView<'a, T> {
    pub keys: &'a [T],
    pub values: &'a [T],
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
pub fn paged_attention<T: KvElement>(
    q: &[f32],
    cache: &CacheView<'_, T>,
    meta: &AttnMetadata,
) -> Vec<f32> {
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
    let features = X86Features::detect();
    out_chunks
        .into_par_iter()
        .zip(q_chunks.into_par_iter())
        .zip(tiles.par_iter())
        .for_each_init(Scratch::default, |scratch, ((out, q), tile)| {
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
            attend_tile(&view, out, cache, scratch, features);
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

impl TileView<'_> {
    /// Key range of the tile's token `i`, relative to the tile's first key: `lo..=hi`.
    #[inline(always)]
    fn key_range(&self, i: usize) -> (usize, usize) {
        let position = self.first_position + i;
        (
            self.meta.first_attended(position) - self.first_key_position,
            position - self.first_key_position,
        )
    }
}

/// A worker thread's buffers, reused across its tiles.
#[derive(Debug, Default)]
struct Scratch {
    scores: Vec<f32>,
    /// One key or value row widened to f32 (unused when the cache holds f32).
    row: Vec<f32>,
}

/// How rows of the cache are read as f32: portable code, or with the x86 features detected.
trait RowLoader: Copy {
    fn load<'a, T: KvElement>(self, src: &'a [T], scratch: &'a mut [f32]) -> &'a [f32];
}

#[derive(Debug, Clone, Copy)]
struct Portable;

impl RowLoader for Portable {
    #[inline(always)]
    fn load<'a, T: KvElement>(self, src: &'a [T], scratch: &'a mut [f32]) -> &'a [f32] {
        T::load(src, scratch)
    }
}

impl RowLoader for X86Features {
    #[inline(always)]
    fn load<'a, T: KvElement>(self, src: &'a [T], scratch: &'a mut [f32]) -> &'a [f32] {
        T::load_x86(src, scratch, self)
    }
}

/// Picks the widest vector code the CPU runs.
fn attend_tile<T: KvElement>(
    view: &TileView<'_>,
    out: &mut [f32],
    cache: &CacheView<'_, T>,
    scratch: &mut Scratch,
    features: Option<X86Features>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(features) = features {
            simd::attend_tile_avx2(view, out, cache, scratch, features);
            return;
        }
    }
    let _ = features;
    attend_tile_with(view, out, cache, scratch, Portable);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod simd {
    use super::{attend_tile_with, CacheView, KvElement, Scratch, TileView, X86Features};

    #[target_feature(enable = "avx2,fma,f16c")]
    fn attend_avx2<T: KvElement>(
        view: &TileView<'_>,
        out: &mut [f32],
        cache: &CacheView<'_, T>,
        scratch: &mut Scratch,
        features: X86Features,
    ) {
        attend_tile_with(view, out, cache, scratch, features);
    }

    pub(super) fn attend_tile_avx2<T: KvElement>(
        view: &TileView<'_>,
        out: &mut [f32],
        cache: &CacheView<'_, T>,
        scratch: &mut Scratch,
        features: X86Features,
    ) {
        // SAFETY: `features` proves that the CPU has AVX2, FMA and F16C, the only requirement
        // of a `target_feature` function; the body is safe Rust.
        unsafe { attend_avx2(view, out, cache, scratch, features) }
    }
}

/// Softmax-weighted sums of values for every head of every token of a tile. Query heads that
/// share a KV head (GQA) and the tile's tokens are handled together, so each key and value is
/// read (and widened) once per tile. Scores outside a token's causal (and sliding) window stay
/// at zero weight.
#[inline(always)]
fn attend_tile_with<T: KvElement>(
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
    let Scratch { scores, row } = scratch;
    scores.resize(num_tokens * group * span, 0.0);
    row.resize(head_dim, 0.0);
    for kv_head in 0..cache.shape.num_kv_heads {
        score_keys(view, cache, kv_head, scores, row, loader);
        for token_scores in scores.chunks_exact_mut(span) {
            softmax_in_place(token_scores);
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
