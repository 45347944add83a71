//! Test oracle: naive attention over contiguous per-sequence keys/values, checked against the
//! paged path on random data with shuffled block tables, with the cache in f32, f16 and bf16.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use half::{bf16, f16};

use super::cpu_kernel::{paged_attention, CacheView};
use super::kv_element::KvElement;
use super::layer::LayerAttention;
use super::metadata::AttnMetadata;
use super::shape::AttnShape;

/// Naive causal attention for one sequence: `q` holds the last `num_new` tokens,
/// `keys`/`values` hold all `len` tokens contiguously (`[len, num_kv_heads, head_dim]`).
fn naive_attention(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    len: usize,
    shape: AttnShape,
    layer: &LayerAttention,
) -> Vec<f32> {
    let AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    } = shape;
    let num_new = q.len() / (num_heads * head_dim);
    let mut out = vec![0.0; q.len()];
    for t in 0..num_new {
        let position = len - num_new + t;
        for h in 0..num_heads {
            let kvh = h / (num_heads / num_kv_heads);
            let qv = &q[(t * num_heads + h) * head_dim..][..head_dim];
            let first = layer.first_attended(position);
            let scores: Vec<f64> = (first..=position)
                .map(|j| {
                    let kv = &keys[(j * num_kv_heads + kvh) * head_dim..][..head_dim];
                    let dot = qv
                        .iter()
                        .zip(kv)
                        .map(|(a, b)| (*a as f64) * (*b as f64))
                        .sum::<f64>();
                    let score = dot * layer.scale as f64;
                    layer
                        .softcap
                        .map_or(score, |cap| cap as f64 * (score / cap as f64).tanh())
                })
                .collect();
            let sink = layer.sink(h).map(f64::from);
            let max = scores.iter().chain(&sink).cloned().fold(f64::NEG_INFINITY, f64::max);
            let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let total: f64 = exps.iter().sum::<f64>() + sink.map_or(0.0, |s| (s - max).exp());
            for (j, e) in (first..=position).zip(&exps) {
                let vv = &values[(j * num_kv_heads + kvh) * head_dim..][..head_dim];
                for d in 0..head_dim {
                    out[(t * num_heads + h) * head_dim + d] += (e / total * vv[d] as f64) as f32;
                }
            }
        }
    }
    out
}

struct Case {
    shape: AttnShape,
    block_size: usize,
    /// Per sequence: (context length after the step, tokens computed this step).
    seqs: Vec<(usize, usize)>,
    /// Scale, window and softcap.
    layer: LayerAttention,
}

fn random_vec(rng: &mut ChaCha8Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0..1.0)).collect()
}

/// Max abs error of paged attention over a cache in each element type, against naive f32
/// attention over the unrounded keys and values.
#[derive(Debug, Default, Clone, Copy)]
struct MaxErrors {
    f32: f32,
    f16: f32,
    bf16: f32,
}

/// Max abs error allowed on inputs in [-1, 1]. The f16 and bf16 caches round keys and values to
/// 11 and 8 significant bits (relative error up to 4.9e-4 and 3.9e-3), and the output, a
/// weighted mean of values, errs by at most about that much: measured worst over the cases
/// below (2026-11-26) 1.8e-7 (f32), 3.0e-4 (f16), 2.3e-3 (bf16).
const TOLERANCE_F32: f32 = 1e-5;
const TOLERANCE_F16: f32 = 1e-3;
const TOLERANCE_BF16: f32 = 8e-3;

fn run_case(case: &Case, seed: u64) -> MaxErrors {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    } = case.shape;
    let kv_row = num_kv_heads * head_dim;
    let num_blocks: usize = case
        .seqs
        .iter()
        .map(|(len, _)| len.div_ceil(case.block_size))
        .sum::<usize>()
        + 3;
    let mut free: Vec<u32> = (0..num_blocks as u32).collect();
    free.shuffle(&mut rng);
    let mut keys = random_vec(&mut rng, num_blocks * case.block_size * kv_row);
    let mut values = random_vec(&mut rng, keys.len());
    let mut meta = AttnMetadata {
        block_size: case.block_size,
        query_start_loc: vec![0],
        ..Default::default()
    };
    let mut q_all = Vec::new();
    let mut expected = Vec::new();
    for (seq, &(len, num_new)) in case.seqs.iter().enumerate() {
        let table: Vec<u32> = (0..len.div_ceil(case.block_size))
            .filter_map(|_| free.pop())
            .collect();
        meta.block_tables.push(table);
        meta.seq_lens.push(len as u32);
        let seq_keys = random_vec(&mut rng, len * kv_row);
        let seq_values = random_vec(&mut rng, len * kv_row);
        for p in 0..len {
            let slot = meta.slot(seq, p);
            keys[slot * kv_row..][..kv_row].copy_from_slice(&seq_keys[p * kv_row..][..kv_row]);
            values[slot * kv_row..][..kv_row].copy_from_slice(&seq_values[p * kv_row..][..kv_row]);
        }
        for p in len - num_new..len {
            meta.positions.push(p as u32);
            meta.slot_mapping.push(meta.slot(seq, p) as u32);
        }
        meta.query_start_loc.push(meta.positions.len() as u32);
        let q = random_vec(&mut rng, num_new * num_heads * head_dim);
        expected.extend(naive_attention(
            &q,
            &seq_keys,
            &seq_values,
            len,
            case.shape,
            &case.layer,
        ));
        q_all.extend(q);
    }
    let cache = Contents {
        q: &q_all,
        keys: &keys,
        values: &values,
        shape: case.shape,
        meta: &meta,
        layer: case.layer.clone(),
        expected: &expected,
    };
    MaxErrors {
        f32: cache.max_error::<f32>(),
        f16: cache.max_error::<f16>(),
        bf16: cache.max_error::<bf16>(),
    }
}

/// A case's inputs and the naive attention over them.
struct Contents<'a> {
    q: &'a [f32],
    keys: &'a [f32],
    values: &'a [f32],
    shape: AttnShape,
    meta: &'a AttnMetadata,
    layer: LayerAttention,
    expected: &'a [f32],
}

impl Contents<'_> {
    /// Paged attention's max abs error with the cache stored in `T`.
    fn max_error<T: KvElement>(&self) -> f32 {
        let stored = |rows: &[f32]| {
            let mut bits = vec![T::Bits::default(); rows.len()];
            T::store(rows, T::view_mut(&mut bits));
            bits
        };
        let (keys, values) = (stored(self.keys), stored(self.values));
        let cache = CacheView {
            keys: T::view(&keys),
            values: T::view(&values),
            shape: self.shape,
        };
        paged_attention(self.q, &cache, self.meta, &self.layer)
            .iter()
            .zip(self.expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max)
    }
}

/// Runs `case` and asserts every element type within its tolerance; returns the errors.
fn assert_within_tolerances(case: &Case, seed: u64) -> MaxErrors {
    let errors = run_case(case, seed);
    assert!(
        errors.f32 < TOLERANCE_F32 && errors.f16 < TOLERANCE_F16 && errors.bf16 < TOLERANCE_BF16,
        "max abs errors {errors:?} for block_size {} seqs {:?} layer {:?}",
        case.block_size,
        case.seqs,
        case.layer,
    );
    errors
}

/// Every head count the kernel meets: one KV head per query head, GQA groups of 3 (the default
/// model's shape), one KV head for all (MQA).
const MHA: AttnShape = AttnShape {
    num_heads: 4,
    num_kv_heads: 4,
    head_dim: 16,
};
const GQA: AttnShape = AttnShape {
    num_heads: 9,
    num_kv_heads: 3,
    head_dim: 64,
};
const MQA: AttnShape = AttnShape {
    num_heads: 8,
    num_kv_heads: 1,
    head_dim: 32,
};

/// A grid of cases: every shape × block size × batch × window, seeds counting up from
/// `first_seed`. Each case is checked within the tolerances; `seen` gets its errors.
fn check_grid(
    shapes: &[AttnShape],
    block_sizes: &[usize],
    batches: &[&[(usize, usize)]],
    windows: &[Option<usize>],
    first_seed: u64,
    mut seen: impl FnMut(MaxErrors),
) {
    let mut seed = first_seed;
    for &shape in shapes {
        for &block_size in block_sizes {
            for seqs in batches {
                for &window in windows {
                    seed += 1;
                    let case = Case {
                        shape,
                        block_size,
                        seqs: seqs.to_vec(),
                        layer: LayerAttention::standard(shape.head_dim).with_window(window),
                    };
                    seen(assert_within_tolerances(&case, seed));
                }
            }
        }
    }
}

#[test]
fn paged_matches_naive_in_every_cache_dtype_for_prefill_decode_mixed_batches_and_windows() {
    let mut worst = MaxErrors::default();
    let batches: [&[(usize, usize)]; 4] = [
        &[(37, 37)],                   // prefill, not a multiple of any block size
        &[(1, 1), (17, 1), (64, 1)],   // decodes
        &[(50, 20), (9, 1), (33, 33)], // chunked prefill continuation + decode + prefill
        &[(16, 16), (32, 5)],          // exact block multiples
    ];
    let windows = [None, Some(1), Some(7), Some(32)];
    check_grid(&[MHA, GQA, MQA], &[1, 4, 16, 32], &batches, &windows, 0, |errors| {
        worst.f32 = worst.f32.max(errors.f32);
        worst.f16 = worst.f16.max(errors.f16);
        worst.bf16 = worst.bf16.max(errors.bf16);
    });
    // Not asserted beyond the tolerances: how close each element type came, for the record.
    println!("worst max abs errors against naive f32 attention: {worst:?}");
}

#[test]
fn long_prefill_runs_over_several_query_tiles_match_naive_in_every_cache_dtype() {
    // Query tiles of up to 64 tokens: a chunked-prefill continuation crossing three tile
    // edges, a prompt of one tile plus one token beside a decode, short runs side by side.
    let batches: [&[(usize, usize)]; 3] = [
        &[(300, 200)],
        &[(65, 65), (40, 1)],
        &[(16, 16), (30, 15), (77, 16)],
    ];
    check_grid(&[GQA, MQA], &[3, 16], &batches, &[None, Some(50)], 1_000, |_| {});
}

#[test]
fn lone_long_decodes_split_into_key_partitions_match_naive_in_every_cache_dtype() {
    let shape = GQA;
    // With 4 threads, one or two decoding sequences leave threads idle: their keys are split
    // into partitions of at least 256 (here 2 to 8 of them), merged by log-sum-exp.
    let batches: [&[(usize, usize)]; 3] = [&[(2_000, 1)], &[(1_100, 1), (600, 1)], &[(513, 1)]];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("a thread pool");
    let mut seed = 2_000;
    for seqs in batches {
        for window in [None, Some(700)] {
            seed += 1;
            let case = Case {
                shape,
                block_size: 16,
                seqs: seqs.to_vec(),
                layer: LayerAttention::standard(shape.head_dim).with_window(window),
            };
            pool.install(|| assert_within_tolerances(&case, seed));
        }
    }
}

/// Every shape × batch × layer settings (`layers` of the shape), a block size of 16, on 4
/// threads, so that lone long decodes are split into key partitions; seeds from `first_seed`.
fn check_on_four_threads(
    shapes: &[AttnShape],
    batches: &[&[(usize, usize)]],
    first_seed: u64,
    layers: impl Fn(AttnShape) -> Vec<LayerAttention>,
) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("a thread pool");
    let mut seed = first_seed;
    for &shape in shapes {
        for seqs in batches {
            for layer in layers(shape) {
                seed += 1;
                let case = Case {
                    shape,
                    block_size: 16,
                    seqs: seqs.to_vec(),
                    layer,
                };
                pool.install(|| assert_within_tolerances(&case, seed));
            }
        }
    }
}

#[test]
fn family_scales_and_logit_softcaps_match_naive_in_prefill_decode_and_split_decodes() {
    // Gemma 2's shape of settings: a scale that is not 1/√head_dim (query_pre_attn_scalar),
    // scores capped by 50·tanh(s/50) — here a cap of 1.5 on scores scaled up 8×, so the cap
    // bends most scores — with and without a window; a lone long decode is split into
    // partitions, whose merge must see the capped scores too.
    let batches: [&[(usize, usize)]; 3] = [&[(50, 20), (9, 1), (33, 33)], &[(1_100, 1)], &[(70, 70)]];
    check_on_four_threads(&[GQA, MHA], &batches, 3_000, |_| {
        [(2.0, Some(1.5), None), (0.05, None, Some(7)), (1.0, Some(0.7), Some(300))]
            .map(|(scale, softcap, window)| LayerAttention {
                scale,
                window,
                softcap,
                sinks: None,
            })
            .to_vec()
    });
}

#[test]
fn attention_sinks_match_naive_in_prefill_decode_and_split_decodes() {
    // gpt-oss: a sink logit per query head in every softmax's denominator. Sinks from far
    // below to far above the scores (so from no effect to most of the weight), alternating
    // windowed layers, and lone long decodes split into partitions, whose merge must count
    // each head's sink once.
    let batches: [&[(usize, usize)]; 3] = [&[(50, 20), (9, 1), (33, 33)], &[(1_100, 1)], &[(600, 1), (1, 1)]];
    check_on_four_threads(&[GQA, MQA], &batches, 4_000, |shape| {
        let sinks: Vec<f32> = (0..shape.num_heads).map(|h| h as f32 * 1.7 - 6.0).collect();
        [None, Some(128)]
            .map(|window| LayerAttention {
                sinks: Some(sinks.clone().into()),
                ..LayerAttention::standard(shape.head_dim).with_window(window)
            })
            .to_vec()
    });
}
