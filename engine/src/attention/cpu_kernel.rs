//! The CPU paged-attention kernel: every query token attends to its sequence's cached keys and
//! values through the block table. Generic over the cache's element type: rows of f16 or bf16 are
//! widened to f32 as they are read (`KvElement`), and all arithmetic is f32. A step's query
//! tokens are cut into tiles of one sequence, computed in parallel, each as two matrix products
//! (`cpu_blocked`).
//!
//! A sequence's decode rows (its next token, and a verification step's proposals after it) get a
//! tile per token, and a token with a long context has its keys split into partitions
//! (`cpu_split`) by a rule of its context alone: so each such row's output is the same bits
//! whatever step carries it — alone, beside other sequences, or as a row of a verification step
//! — and speculative decoding's greedy output is the output without it.

use rayon::prelude::*;

use super::cpu_tile::{Portable, RowLoader, Scratch, Tile, TileView};
pub use super::cpu_tile::CacheView;
use super::kv_element::{KvElement, X86Features};
use super::layer::LayerAttention;
use super::metadata::AttnMetadata;
use super::{cpu_blocked, cpu_split};

/// Most query tokens of one sequence per tile: the rows of its matrix products (times the GQA
/// group), and the most keys a tile computes beyond its first token's causal limit.
const QUERY_TILE: usize = 64;

/// Most scores (query rows × keys) a tile holds at once, 4 MiB of f32 per thread: tiles of long
/// contexts have fewer tokens (down to one), so a 128k-token context does not need a score
/// matrix of hundreds of MiB.
const MAX_TILE_SCORES: usize = 1 << 20;

/// Causal attention of every query token over its sequence's cached context (which already holds
/// this step's keys and values), as `layer` says. `q` is `[num_tokens, num_heads, head_dim]`.
pub fn paged_attention<T: KvElement>(
    q: &[f32],
    cache: &CacheView<'_, T>,
    meta: &AttnMetadata,
    layer: &LayerAttention,
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
    let mut tiles = tiles(meta, cache.shape.group_size());
    split_long_rows(&mut tiles, layer);
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
            let window = layer.first_attended(tile.first_position);
            let last = tile.first_position + tile.num_tokens - 1;
            let slots = &seq_slots[tile.seq][window..=last];
            let view = TileView {
                q,
                slots,
                first_key_position: window,
                first_position: tile.first_position,
                layer,
                with_sinks: true,
            };
            if tile.num_partitions > 1 {
                let num_heads = cache.shape.num_heads;
                cpu_split::attend(&view, tile.num_partitions, num_heads, out, |v, o, s| {
                    attend_tile(v, o, cache, s, features)
                });
            } else {
                attend_tile(&view, out, cache, scratch, features);
            }
        });
    out
}

/// Marks one-token tiles with long contexts for key partitions, by their context alone.
fn split_long_rows(tiles: &mut [Tile], layer: &LayerAttention) {
    let num_threads = rayon::current_num_threads();
    for tile in tiles.iter_mut().filter(|t| t.num_tokens == 1) {
        let span = tile.first_position + 1 - layer.first_attended(tile.first_position);
        tile.num_partitions = cpu_split::num_partitions(span, num_threads);
    }
}

/// Splits every sequence's query tokens into tiles, in token order: one per token for decode
/// rows, else up to `QUERY_TILE` tokens, fewer where the sequence's context would make the
/// tile's scores exceed `MAX_TILE_SCORES`.
fn tiles(meta: &AttnMetadata, group_size: usize) -> Vec<Tile> {
    let mut tiles = Vec::new();
    for seq in 0..meta.num_seqs() {
        let num_new = (meta.query_start_loc[seq + 1] - meta.query_start_loc[seq]) as usize;
        let seq_len = meta.seq_lens[seq] as usize;
        let first_position = seq_len - num_new;
        let tile_len = if meta.are_decode_rows(seq) {
            1
        } else {
            (MAX_TILE_SCORES / (group_size * seq_len).max(1)).clamp(1, QUERY_TILE)
        };
        let mut start = 0;
        while start < num_new {
            let num_tokens = (num_new - start).min(tile_len);
            tiles.push(Tile {
                seq,
                first_position: first_position + start,
                num_tokens,
                num_partitions: 1,
            });
            start += num_tokens;
        }
    }
    tiles
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

/// One tile, with `loader`'s instructions inlined.
#[inline(always)]
fn attend_tile_with<T: KvElement>(
    view: &TileView<'_>,
    out: &mut [f32],
    cache: &CacheView<'_, T>,
    scratch: &mut Scratch,
    loader: impl RowLoader,
) {
    cpu_blocked::attend(view, out, cache, scratch, loader);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(seqs: &[(u32, u32)]) -> AttnMetadata {
        let mut meta = AttnMetadata {
            query_start_loc: vec![0],
            ..Default::default()
        };
        for &(seq_len, num_new) in seqs {
            meta.seq_lens.push(seq_len);
            let end = meta.query_start_loc.last().copied().unwrap_or(0) + num_new;
            meta.query_start_loc.push(end);
        }
        meta
    }

    #[test]
    fn tiles_hold_64_tokens_fewer_for_long_contexts_and_cover_every_token_in_order() {
        // 130 new tokens of a short sequence; 100 of a 100,000-token context (GQA group 3:
        // 2^20 / 300,000 = 3 tokens per tile); one decode.
        let tiles = tiles(&meta(&[(130, 130), (100_000, 100), (50, 1)]), 3);
        let lens: Vec<(usize, usize)> = tiles.iter().map(|t| (t.seq, t.num_tokens)).collect();
        assert_eq!(&lens[..3], &[(0, 64), (0, 64), (0, 2)]);
        assert!(lens[3..36].iter().all(|&(seq, n)| seq == 1 && n <= 3));
        assert_eq!(tiles.iter().filter(|t| t.seq == 1).map(|t| t.num_tokens).sum::<usize>(), 100);
        assert_eq!(lens.last(), Some(&(2, 1)));
        let mut next = 99_900;
        for tile in tiles.iter().filter(|t| t.seq == 1) {
            assert_eq!(tile.first_position, next);
            next += tile.num_tokens;
        }
    }
}
