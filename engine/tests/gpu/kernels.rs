//! Cache writes and paged attention on the GPU against the CPU reference (`CpuKvCache`, itself
//! checked against naive attention), on random inputs: decodes, prefills, mixed batches,
//! prefills that start after a cached prefix, GQA ratios, head sizes, block sizes, lengths that
//! are not multiples of the block size, long contexts (split-K), sliding windows, f32/f16/bf16.
//!
//! Tolerances (max abs error; inputs in [-1, 1] are rounded to the dtype first, so both sides
//! see the same values): f32 1e-4 (summation order), f16 2e-3 and bf16 1e-2 (the output is
//! rounded to the dtype: half an ulp near 1 is 4.9e-4 and 3.9e-3).

use candle_core::{DType, Device, Tensor};
use pagoda_engine::attention::cuda::CudaKvCache;
use pagoda_engine::attention::{AttnMetadata, AttnShape, CpuKvCache, LayerAttention, PagedKvCache};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn tolerance(dtype: DType) -> f32 {
    match dtype {
        DType::F32 => 1e-4,
        DType::F16 => 2e-3,
        _ => 1e-2,
    }
}

struct Case {
    shape: AttnShape,
    block_size: usize,
    /// Per sequence: (context length after the step, tokens computed this step).
    seqs: Vec<(usize, usize)>,
    /// Scale, window and softcap.
    layer: LayerAttention,
    dtype: DType,
}

/// Metadata of one step: for each sequence, positions `first..last` with its block table.
fn step_meta(case: &Case, tables: &[Vec<u32>], ranges: &[(usize, usize)]) -> AttnMetadata {
    let mut meta = AttnMetadata {
        block_size: case.block_size,
        query_start_loc: vec![0],
        ..Default::default()
    };
    for (seq, &(first, last)) in ranges.iter().enumerate() {
        meta.block_tables.push(tables[seq].clone());
        meta.seq_lens.push(last as u32);
        for position in first..last {
            meta.positions.push(position as u32);
            let block = tables[seq][position / case.block_size] as usize;
            meta.slot_mapping
                .push((block * case.block_size + position % case.block_size) as u32);
        }
        meta.query_start_loc.push(meta.positions.len() as u32);
    }
    meta
}

/// Random `[rows, q | k | v]` rows rounded to `dtype`, as a fused projection output would be.
fn random_qkv(rng: &mut ChaCha8Rng, rows: usize, shape: AttnShape, dtype: DType) -> Tensor {
    let width = (shape.num_heads + 2 * shape.num_kv_heads) * shape.head_dim;
    let values: Vec<f32> = (0..rows * width)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    Tensor::from_vec(values, (rows, width), &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// q, k, v as strided column ranges of `qkv` (as the model hands them over).
fn split(qkv: &Tensor, shape: AttnShape) -> [Tensor; 3] {
    let (q, kv) = (
        shape.num_heads * shape.head_dim,
        shape.num_kv_heads * shape.head_dim,
    );
    [
        qkv.narrow(1, 0, q).unwrap(),
        qkv.narrow(1, q, kv).unwrap(),
        qkv.narrow(1, q + kv, kv).unwrap(),
    ]
}

/// Runs one step on both caches; returns the max abs difference of the outputs.
fn run_step(
    gpu: &Device,
    case: &Case,
    cpu_cache: &mut CpuKvCache,
    gpu_cache: &mut CudaKvCache,
    meta: &AttnMetadata,
    qkv: &Tensor,
) -> f32 {
    let [q, k, v] = split(&qkv.to_dtype(DType::F32).unwrap(), case.shape);
    let want = cpu_cache
        .attend(0, (&q, &k, &v), meta, &case.layer)
        .unwrap();
    let [q, k, v] = split(&qkv.to_device(gpu).unwrap(), case.shape);
    gpu_cache.begin_step(meta).unwrap();
    let got = gpu_cache
        .attend(0, (&q, &k, &v), meta, &case.layer)
        .unwrap();
    assert_eq!(got.dims(), want.dims());
    let got: Vec<f32> = got
        .to_dtype(DType::F32)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let want: Vec<f32> = want.flatten_all().unwrap().to_vec1().unwrap();
    got.iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}

/// Checks every written slot of the GPU cache against the key/value rows the CPU cache holds.
fn check_cache_writes(
    case: &Case,
    cpu_cache: &CpuKvCache,
    gpu_cache: &CudaKvCache,
    metas: &[AttnMetadata],
) {
    let (gpu_keys, gpu_values) = gpu_cache.read_layer(0).unwrap();
    let (cpu_keys, cpu_values) = cpu_cache.layer(0);
    let AttnShape {
        num_kv_heads,
        head_dim,
        ..
    } = case.shape;
    for &slot in metas.iter().flat_map(|m| &m.slot_mapping) {
        let slot = slot as usize;
        for head in 0..num_kv_heads {
            let gpu_at = gpu_cache.slot_offset(slot, head);
            let cpu_at = (slot * num_kv_heads + head) * head_dim;
            assert_eq!(
                gpu_keys[gpu_at..][..head_dim],
                cpu_keys[cpu_at..][..head_dim],
                "key slot {slot} head {head}"
            );
            assert_eq!(
                gpu_values[gpu_at..][..head_dim],
                cpu_values[cpu_at..][..head_dim],
                "value slot {slot} head {head}"
            );
        }
    }
}

/// The context (all but the last `num_new` tokens of each sequence) goes in as one prefill
/// step, then the tested step runs; both steps' outputs and every cache write are compared.
fn run_case(gpu: &Device, case: &Case, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let num_blocks: usize = case
        .seqs
        .iter()
        .map(|(len, _)| len.div_ceil(case.block_size))
        .sum::<usize>()
        + 3;
    let mut free: Vec<u32> = (0..num_blocks as u32).collect();
    free.shuffle(&mut rng);
    let tables: Vec<Vec<u32>> = case
        .seqs
        .iter()
        .map(|(len, _)| {
            (0..len.div_ceil(case.block_size))
                .map(|_| free.pop().unwrap())
                .collect()
        })
        .collect();
    let mut cpu_cache = CpuKvCache::new(1, case.shape, case.block_size, num_blocks);
    let mut gpu_cache =
        CudaKvCache::new(gpu, case.dtype, 1, case.shape, case.block_size, num_blocks).unwrap();
    let context: Vec<(usize, usize)> = case.seqs.iter().map(|&(len, new)| (0, len - new)).collect();
    let tested: Vec<(usize, usize)> = case
        .seqs
        .iter()
        .map(|&(len, new)| (len - new, len))
        .collect();
    let mut metas = Vec::new();
    for ranges in [context, tested] {
        let meta = step_meta(case, &tables, &ranges);
        if meta.num_tokens() > 0 {
            let qkv = random_qkv(&mut rng, meta.num_tokens(), case.shape, case.dtype);
            let error = run_step(gpu, case, &mut cpu_cache, &mut gpu_cache, &meta, &qkv);
            assert!(
                error <= tolerance(case.dtype),
                "max abs error {error} > {} for {:?} {:?} block_size {} seqs {:?} layer {:?}",
                tolerance(case.dtype),
                case.dtype,
                case.shape,
                case.block_size,
                case.seqs,
                case.layer
            );
            metas.push(meta);
        }
    }
    check_cache_writes(case, &cpu_cache, &gpu_cache, &metas);
}

fn shape(num_heads: usize, num_kv_heads: usize, head_dim: usize) -> AttnShape {
    AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    }
}

/// Decode, prefill, mixed, prefix-hit batches for every dtype, GQA ratio, head and block size
/// (16 and 32 have kernels of their own, 8 runs the one that reads the block size at run time).
#[test]
fn paged_attention_matches_the_cpu_reference() {
    let Some(gpu) = crate::gpu() else { return };
    let batches: [&[(usize, usize)]; 5] = [
        &[(1, 1), (17, 1), (100, 1), (33, 1)], // decodes, lengths off the block grid
        &[(37, 37), (5, 5)],                   // prefills from position 0
        &[(50, 20), (9, 1), (33, 33), (64, 1)], // chunked continuation + decodes + prefill
        &[(300, 150), (48, 47)],               // prefills after a cached prefix
        &[(32, 32), (64, 32), (16, 1)],        // exact block multiples
    ];
    let shapes = [
        shape(8, 8, 64),
        shape(9, 3, 64),
        shape(32, 8, 64),
        shape(16, 8, 128),
        shape(16, 2, 128),
        shape(20, 4, 80),
        shape(12, 4, 96),
        shape(4, 2, 16),
    ];
    let mut seed = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for shape in shapes {
            for block_size in [8, 16, 32] {
                for seqs in batches {
                    seed += 1;
                    run_case(
                        &gpu,
                        &Case {
                            shape,
                            block_size,
                            seqs: seqs.to_vec(),
                            layer: LayerAttention::standard(shape.head_dim),
                            dtype,
                        },
                        seed,
                    );
                }
            }
        }
    }
}

/// Long contexts split the key range across thread blocks (split-K) and merge the partitions.
#[test]
fn long_decodes_split_the_key_range_and_still_match() {
    let Some(gpu) = crate::gpu() else { return };
    for (seed, dtype) in [DType::F32, DType::BF16].into_iter().enumerate() {
        for seqs in [
            vec![(4000, 1)],
            vec![(3001, 1), (1500, 1)],
            vec![(2500, 40)],
        ] {
            let case = Case {
                shape: shape(32, 8, 128),
                block_size: 16,
                seqs,
                layer: LayerAttention::standard(128),
                dtype,
            };
            run_case(&gpu, &case, 1000 + seed as u64);
        }
    }
}

/// Mistral-style sliding windows, including windows shorter than a block and than a tile, in
/// f32 and bf16.
#[test]
fn sliding_windows_match() {
    let Some(gpu) = crate::gpu() else { return };
    for dtype in [DType::F32, DType::BF16] {
        for window in [1, 7, 32, 700] {
            for seqs in [vec![(1200, 1), (90, 90)], vec![(800, 300)]] {
                let case = Case {
                    shape: shape(8, 2, 64),
                    block_size: 16,
                    seqs,
                    layer: LayerAttention::standard(64).with_window(Some(window)),
                    dtype,
                };
                run_case(&gpu, &case, 2000 + window as u64);
            }
        }
    }
}

/// Gemma 2's settings: a scale other than 1/√head_dim, logit softcaps, sliding and global
/// layers, with split-K decodes (the reduction sees capped scores).
#[test]
fn family_scales_and_softcaps_match() {
    let Some(gpu) = crate::gpu() else { return };
    for dtype in [DType::F32, DType::BF16] {
        for (scale, softcap, window) in [
            (0.2, Some(1.5), None),
            (0.05, None, Some(7)),
            (1.0, Some(0.7), Some(300)),
        ] {
            for seqs in [vec![(2500, 1), (90, 90)], vec![(800, 300)]] {
                let case = Case {
                    shape: shape(8, 4, 128),
                    block_size: 16,
                    seqs,
                    layer: LayerAttention {
                        scale,
                        window,
                        softcap,
                        sinks: None,
                    },
                    dtype,
                };
                run_case(&gpu, &case, 3000 + (scale * 100.0) as u64);
            }
        }
    }
}
