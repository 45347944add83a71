//! Sampling on the GPU: the sampling kernel against its host twin (`sampling::thresholds`) and
//! against the exact filtered distribution (chi-square over 10,000 draws), and the batch sampler
//! on GPU logits: seeded requests give the same tokens alone and inside batches of 8 and 32
//! mixed requests (device rows, greedy rows, host rows with penalties and log-probabilities,
//! which go through page-locked memory).

use candle_core::{Device, Tensor};
use pagoda_engine::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use pagoda_engine::sampling::reference::{check_draws, filtered_distribution, FilterParams};
use pagoda_engine::sampling::thresholds::{kept_tokens, sample_by_thresholds};
use pagoda_engine::sampling::{BatchSampler, DeviceRow, DeviceSampler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CASES: [FilterParams; 5] = [
    FilterParams {
        temperature: 0.8,
        top_k: 0,
        top_p: 0.95,
        min_p: 0.0,
    },
    FilterParams {
        temperature: 1.0,
        top_k: 50,
        top_p: 1.0,
        min_p: 0.0,
    },
    FilterParams {
        temperature: 0.7,
        top_k: 40,
        top_p: 0.9,
        min_p: 0.05,
    },
    FilterParams {
        temperature: 1.3,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.1,
    },
    FilterParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
    },
];

#[test]
fn the_kernel_draws_what_its_host_twin_draws() {
    let Some(gpu) = crate::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Vocabularies of SmolLM2, Llama 3 and Qwen3; rows from peaked to flat.
    for (vocab, spread) in [(49_152, 8.0f32), (128_256, 3.0), (151_936, 12.0)] {
        let num_rows = 4;
        let values: Vec<f32> = (0..num_rows * vocab)
            .map(|_| (rng.random::<f32>() * 2.0 - 1.0) * spread)
            .collect();
        let logits = Tensor::from_vec(values.clone(), (num_rows, vocab), &gpu).unwrap();
        let mut device = DeviceSampler::default();
        for p in CASES {
            let filters = p.row_filters();
            let uniforms: Vec<f64> = (0..num_rows * 8).map(|_| rng.random::<f64>()).collect();
            let rows: Vec<DeviceRow> = uniforms
                .iter()
                .enumerate()
                .map(|(i, &uniform)| DeviceRow {
                    row: i % num_rows,
                    filters,
                    uniform,
                    allowed: None,
                })
                .collect();
            let tokens = device.sample(&logits, &rows).unwrap();
            assert_eq!(tokens.len(), rows.len());
            let mut same = 0;
            for (entry, &token) in rows.iter().zip(&tokens) {
                let row = &values[entry.row * vocab..(entry.row + 1) * vocab];
                let kept = kept_tokens(row, &filters);
                let twin = sample_by_thresholds(row, &filters, entry.uniform as f32);
                // The GPU sums in another order: a token at a boundary may differ, never one far
                // outside the kept set.
                assert!(
                    kept.binary_search(&token).is_ok() || kept.len() > 1000,
                    "vocab {vocab} {p:?}: token {token} not kept ({} kept)",
                    kept.len()
                );
                same += usize::from(token == twin);
            }
            assert!(
                same * 10 >= rows.len() * 9,
                "vocab {vocab} {p:?}: only {same} of {} draws equal the twin's",
                rows.len()
            );
        }
    }
}

#[test]
fn kernel_draws_follow_the_exact_filtered_distribution() {
    let Some(gpu) = crate::gpu() else { return };
    let row = [
        3.0f32, 2.6, 2.2, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0, -2.0, 2.4, 1.8, 2.5, -0.5,
    ];
    let logits = Tensor::from_slice(&row, (1, row.len()), &gpu).unwrap();
    let cases = [
        FilterParams {
            temperature: 0.8,
            top_k: 6,
            top_p: 1.0,
            min_p: 0.0,
        },
        FilterParams {
            temperature: 1.0,
            top_k: 0,
            top_p: 0.85,
            min_p: 0.0,
        },
        FilterParams {
            temperature: 1.2,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.2,
        },
        FilterParams {
            temperature: 0.9,
            top_k: 8,
            top_p: 0.9,
            min_p: 0.1,
        },
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let mut device = DeviceSampler::default();
    for p in cases {
        // 10,000 draws of the same row in one launch, one uniform each.
        let rows: Vec<DeviceRow> = (0..10_000)
            .map(|_| DeviceRow {
                row: 0,
                filters: p.row_filters(),
                uniform: rng.random::<f64>(),
                allowed: None,
            })
            .collect();
        let tokens = device.sample(&logits, &rows).unwrap();
        if let Err(why) = check_draws(&tokens, &filtered_distribution(&row, &p)) {
            panic!("{p:?}: {why}");
        }
    }
}

#[test]
fn the_device_argmax_takes_the_first_maximum_and_skips_nan() {
    let Some(gpu) = crate::gpu() else { return };
    let vocab = 128_256;
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    let mut rows: Vec<Vec<f32>> = (0..6)
        .map(|_| {
            (0..vocab)
                .map(|_| rng.random::<f32>() * 20.0 - 10.0)
                .collect()
        })
        .collect();
    rows[1][77_000] = 50.0; // a clear winner late in the row
    rows[2][5] = 50.0; // a tie: the lower id wins
    rows[2][100_000] = 50.0;
    rows[3][9] = f32::NAN; // NaN never wins
    rows[3][10] = 40.0;
    rows[4] = vec![f32::NEG_INFINITY; vocab]; // nothing possible: token 0
    rows[5][3] = f32::INFINITY;
    let expected: Vec<u32> = rows
        .iter()
        .map(|row| {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            if max == f32::NEG_INFINITY {
                0
            } else {
                row.iter().position(|&x| x == max).unwrap() as u32
            }
        })
        .collect();
    assert_eq!(&expected[1..4], &[77_000, 5, 10]);
    let flat: Vec<f32> = rows.concat();
    let logits = Tensor::from_vec(flat, (rows.len(), vocab), &gpu).unwrap();
    assert_eq!(DeviceSampler::default().argmax(&logits).unwrap(), expected);
}

fn request(id: u64, sampling: SamplingParams) -> EngineRequest {
    let stop = StopConditions {
        ignore_eos: true,
        ..StopConditions::default()
    };
    EngineRequest::new(RequestId(id), vec![1, 2, 3], sampling, stop)
}

/// Request `i` of a mixed batch: device rows, greedy rows and host rows (penalties, logprobs).
fn mixed(i: u64) -> SamplingParams {
    let base = SamplingParams {
        seed: Some(1000 + i),
        ..SamplingParams::default()
    };
    match i % 4 {
        0 => SamplingParams {
            temperature: 0.8,
            top_p: 0.95,
            ..base
        },
        1 => SamplingParams {
            temperature: 0.0,
            ..base
        },
        2 => SamplingParams {
            temperature: 1.0,
            top_k: 20,
            repetition_penalty: 1.2,
            ..base
        },
        _ => SamplingParams {
            temperature: 0.7,
            min_p: 0.05,
            logprobs: Some(2),
            ..base
        },
    }
}

#[test]
fn seeded_requests_draw_the_same_tokens_alone_and_in_mixed_batches() {
    let Some(gpu) = crate::gpu() else { return };
    let vocab = 32_000;
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let steps: Vec<Vec<f32>> = (0..6)
        .map(|_| {
            (0..32 * vocab)
                .map(|_| rng.random::<f32>() * 6.0 - 3.0)
                .collect()
        })
        .collect();
    // Each request reads its own row (row `i` of every step), whatever batch it is in.
    let run = |ids: &[u64]| -> Vec<Vec<u32>> {
        let mut sampler = BatchSampler::new(vec![0], vocab);
        let request_ids: Vec<RequestId> = ids.iter().map(|&i| RequestId(i)).collect();
        for &i in ids {
            sampler.add(&request(i, mixed(i)));
        }
        let mut out = vec![Vec::new(); ids.len()];
        for step in &steps {
            let rows: Vec<f32> = ids
                .iter()
                .flat_map(|&i| {
                    step[i as usize * vocab..(i as usize + 1) * vocab]
                        .iter()
                        .copied()
                })
                .collect();
            let logits = Tensor::from_vec(rows, (ids.len(), vocab), &gpu).unwrap();
            let sampled = sampler.sample(&logits, &request_ids).unwrap();
            for (k, token) in sampled.iter().enumerate() {
                out[k].push(token.token_id);
                assert_eq!(
                    token.logprob.is_some(),
                    ids[k] % 4 == 3,
                    "request {}",
                    ids[k]
                );
            }
        }
        out
    };
    let batch_32: Vec<u64> = (0..32).collect();
    let all = run(&batch_32);
    for i in [0u64, 1, 2, 3, 12, 31] {
        assert_eq!(run(&[i])[0], all[i as usize], "request {i} alone vs in 32");
    }
    let batch_8: Vec<u64> = (8..16).rev().collect();
    let eight = run(&batch_8);
    for (k, &i) in batch_8.iter().enumerate() {
        assert_eq!(eight[k], all[i as usize], "request {i} in 8 vs in 32");
    }
    // The same on the CPU: the greedy rows and the host rows (penalties, logprobs: the same
    // pipeline on the same values, copied through page-locked memory) agree exactly; the device
    // rows sample the same distribution with the same uniforms, summed in another order.
    let cpu_logits = |step: &Vec<f32>| Tensor::from_vec(step.clone(), (32, vocab), &Device::Cpu);
    let mut cpu = BatchSampler::new(vec![0], vocab);
    for i in 0..32 {
        cpu.add(&request(i, mixed(i)));
    }
    let ids: Vec<RequestId> = (0..32).map(RequestId).collect();
    for (s, step) in steps.iter().enumerate() {
        let sampled = cpu.sample(&cpu_logits(step).unwrap(), &ids).unwrap();
        for i in (0..32).filter(|i| i % 4 != 0) {
            assert_eq!(sampled[i].token_id, all[i][s], "request {i}, step {s}");
        }
    }
}
