//! Split-key decode (flash-decoding) on the CPU: a one-token tile with a long context (a decode,
//! a verification row) has its keys cut into partitions attended in parallel, each softmax-normalized on its own, then merged by their log-sum-exp weights —
//! `out = Σ_p e^(lse_p − lse) · out_p` with `lse = log Σ_p e^(lse_p)` —, which equals softmax
//! over all keys at once.

use rayon::prelude::*;

use super::cpu_tile::{Scratch, TileView};

/// Fewest keys worth a partition of their own: below this the merge and the threads' hand-off
/// cost more than the keys.
const MIN_PARTITION_KEYS: usize = 256;

/// How many partitions a one-token tile over `span` keys is split into on `num_threads`
/// threads: two per thread, at least `MIN_PARTITION_KEYS` keys each. The rule reads nothing of
/// the step (its other tiles), so a row is split alike in every step that carries it and its
/// output is the same bits.
pub(super) fn num_partitions(span: usize, num_threads: usize) -> usize {
    (2 * num_threads).min(span / MIN_PARTITION_KEYS).max(1)
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
    // A scratch per worker, not per partition: its buffers (the span's keys and values widened
    // to f32) are reused from partition to partition.
    let partials: Vec<(Vec<f32>, Vec<f32>)> = (0..num_partitions)
        .into_par_iter()
        .map_init(Scratch::default, |scratch, p| {
            let keys = span * p / num_partitions..span * (p + 1) / num_partitions;
            let sub_view = TileView {
                slots: &view.slots[keys.clone()],
                first_key_position: view.first_key_position + keys.start,
                with_sinks: view.with_sinks && p == 0,
                ..*view
            };
            let mut partial = vec![0.0; out.len()];
            attend(&sub_view, &mut partial, scratch);
            (partial, scratch.lse[..num_heads].to_vec())
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
    fn partitions_two_per_thread_when_keys_are_many() {
        assert_eq!(num_partitions(4096, 2), 4);
        assert_eq!(num_partitions(4096, 8), 16);
        assert_eq!(num_partitions(600, 8), 2, "at least 256 keys each");
        assert_eq!(num_partitions(255, 2), 1);
    }
}
