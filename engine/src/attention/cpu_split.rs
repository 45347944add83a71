//! Split-key decode (flash-decoding) on the CPU: when a step has fewer tiles than threads (one
//! long sequence decoding, say), a decode token's keys are cut into partitions attended in
//! parallel, each softmax-normalized on its own, then merged by their log-sum-exp weights —
//! `out = Σ_p e^(lse_p − lse) · out_p` with `lse = log Σ_p e^(lse_p)` —, which equals softmax
//! over all keys at once.

use rayon::prelude::*;

use super::cpu_tile::{Scratch, TileView};

/// Fewest keys worth a partition of their own: below this the merge and the threads' hand-off
/// cost more than the keys.
const MIN_PARTITION_KEYS: usize = 256;

/// How many partitions a decode tile over `span` keys is split into when the step has
/// `num_tiles` tiles for `num_threads` threads: enough for two partitions per thread across
/// the step's tiles, 1 when every thread already has a tile.
pub(super) fn num_partitions(span: usize, num_tiles: usize, num_threads: usize) -> usize {
    if num_tiles >= num_threads {
        return 1;
    }
    (2 * num_threads)
        .div_ceil(num_tiles)
        .min(span / MIN_PARTITION_KEYS)
        .max(1)
}

/// Attends a one-token tile in `num_partitions` key partitions in parallel and merges them into
/// `out` (`[num_heads, head_dim]`). `attend` computes one sub-tile into its output and leaves
/// each head's log-sum-exp in its scratch's `lse`.
pub(super) fn attend(
    view: &TileView<'_>,
    num_partitions: usize,
    num_heads: usize,
    out: &mut [f32],
    attend: impl Fn(&TileView<'_>, &mut [f32], &mut Scratch) + Sync,
) {
    let span = view.slots.len();
    let head_dim = out.len() / num_heads;
    let partials: Vec<(Vec<f32>, Vec<f32>)> = (0..num_partitions)
        .into_par_iter()
        .map(|p| {
            let keys = span * p / num_partitions..span * (p + 1) / num_partitions;
            let sub_view = TileView {
                slots: &view.slots[keys.clone()],
                first_key_position: view.first_key_position + keys.start,
                with_sinks: view.with_sinks && p == 0,
                ..*view
            };
            let mut partial = vec![0.0; out.len()];
            let mut scratch = Scratch::default();
            attend(&sub_view, &mut partial, &mut scratch);
            scratch.lse.truncate(num_heads);
            (partial, scratch.lse)
        })
        .collect();
    out.fill(0.0);
    for head in 0..num_heads {
        let lse_max = partials
            .iter()
            .map(|(_, lse)| lse[head])
            .fold(f32::NEG_INFINITY, f32::max);
        let weights: Vec<f32> = partials
            .iter()
            .map(|(_, lse)| (lse[head] - lse_max).exp())
            .collect();
        let total: f32 = weights.iter().sum();
        let out_head = &mut out[head * head_dim..][..head_dim];
        for ((partial, _), weight) in partials.iter().zip(&weights) {
            let scale = weight / total;
            for (o, x) in out_head.iter_mut().zip(&partial[head * head_dim..][..head_dim]) {
                *o += scale * x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_only_when_threads_would_idle_and_keys_are_many() {
        assert_eq!(num_partitions(4096, 8, 2), 1, "every thread has a tile");
        assert_eq!(num_partitions(4096, 1, 2), 4);
        assert_eq!(num_partitions(4096, 1, 8), 16);
        assert_eq!(num_partitions(600, 1, 8), 2, "at least 256 keys each");
        assert_eq!(num_partitions(255, 1, 2), 1);
    }
}
