//! Rows that follow a grammar, decided on the GPU with their token mask uploaded: the masked
//! argmax and the masked draw against their host twins (`sampling::thresholds`), the fallback
//! when nothing the mask allows is possible, and the batch sampler on GPU logits against the same
//! sampler on the CPU (greedy grammar rows: the very tokens; sampled ones: always allowed).

use std::sync::Arc;

use candle_core::{Device, Tensor};
use pagoda_engine::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use pagoda_engine::sampling::reference::FilterParams;
use pagoda_engine::sampling::thresholds::{
    argmax_allowed, kept_tokens, sample_allowed_by_thresholds,
};
use pagoda_engine::sampling::{BatchSampler, DeviceRow, DeviceSampler};
use pagoda_engine::{ConstraintError, ConstraintMatcher, TokenConstraint, TokenMask};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Masks of a row: every third token, a band of 100, one token.
fn masks(vocab: usize) -> Vec<TokenMask> {
    let sets: [Vec<u32>; 3] = [
        (0..vocab as u32).step_by(3).collect(),
        (1_000..1_100).collect(),
        vec![vocab as u32 - 1],
    ];
    sets.iter()
        .map(|set| {
            let mut mask = TokenMask::new(vocab);
            set.iter().for_each(|&t| mask.allow(t));
            mask
        })
        .collect()
}

#[test]
fn masked_rows_take_what_their_twins_take() {
    let Some(gpu) = crate::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    for vocab in [49_152usize, 128_256] {
        let num_rows = 3;
        let values: Vec<f32> = (0..num_rows * vocab)
            .map(|_| rng.random::<f32>() * 10.0 - 5.0)
            .collect();
        let logits = Tensor::from_vec(values.clone(), (num_rows, vocab), &gpu).unwrap();
        let row = |r: usize| &values[r * vocab..(r + 1) * vocab];
        let masks = masks(vocab);
        let mut device = DeviceSampler::default();
        let pairs: Vec<(usize, &TokenMask)> = (0..num_rows)
            .flat_map(|r| masks.iter().map(move |m| (r, m)))
            .collect();
        let greedy = device.argmax_allowed(&logits, &pairs).unwrap();
        for ((r, mask), token) in pairs.iter().zip(&greedy) {
            assert_eq!(
                *token,
                argmax_allowed(row(*r), mask),
                "vocab {vocab}, row {r}"
            );
        }
        let filters = FilterParams {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.0,
        }
        .row_filters();
        let rows: Vec<DeviceRow> = pairs
            .iter()
            .flat_map(|&(r, mask)| (0..4).map(move |_| (r, mask)))
            .map(|(r, mask)| DeviceRow {
                row: r,
                filters,
                uniform: rng.random::<f64>(),
                allowed: Some(mask),
            })
            .collect();
        let drawn = device.sample(&logits, &rows).unwrap();
        let mut same = 0;
        for (entry, &token) in rows.iter().zip(&drawn) {
            let mask = entry.allowed.unwrap();
            assert!(
                mask.allows(token),
                "vocab {vocab}: token {token} outside the mask"
            );
            let mut masked = row(entry.row).to_vec();
            mask.apply_to(&mut masked);
            assert!(
                kept_tokens(&masked, &filters).binary_search(&token).is_ok(),
                "token {token} not kept"
            );
            same += usize::from(
                token
                    == sample_allowed_by_thresholds(
                        row(entry.row),
                        Some(mask),
                        &filters,
                        entry.uniform as f32,
                    ),
            );
        }
        assert!(
            same * 10 >= rows.len() * 9,
            "vocab {vocab}: {same} of {} draws equal the twin's",
            rows.len()
        );
    }
}

#[test]
fn a_masked_row_with_nothing_possible_takes_the_first_allowed_token() {
    let Some(gpu) = crate::gpu() else { return };
    let vocab = 4_096;
    let mut values = vec![1.0f32; vocab];
    for v in values.iter_mut().skip(100).take(50) {
        *v = f32::NEG_INFINITY;
    }
    values[120] = f32::NAN;
    let logits = Tensor::from_vec(values.clone(), (1, vocab), &gpu).unwrap();
    let mut mask = TokenMask::new(vocab);
    (110..140).for_each(|t| mask.allow(t));
    let none = TokenMask::new(vocab);
    let mut device = DeviceSampler::default();
    assert_eq!(
        device
            .argmax_allowed(&logits, &[(0, &mask), (0, &none)])
            .unwrap(),
        vec![110, 0]
    );
    let filters = FilterParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 0.9,
        min_p: 0.0,
    }
    .row_filters();
    let rows = [
        DeviceRow {
            row: 0,
            filters,
            uniform: 0.5,
            allowed: Some(&mask),
        },
        DeviceRow {
            row: 0,
            filters,
            uniform: 0.5,
            allowed: Some(&none),
        },
    ];
    assert_eq!(device.sample(&logits, &rows).unwrap(), vec![110, 0]);
    assert_eq!(
        sample_allowed_by_thresholds(&values, Some(&mask), &filters, 0.5),
        110
    );
}

/// Allows the tokens `token % modulus == residue` forever.
#[derive(Debug)]
struct Residues {
    modulus: u32,
    residue: u32,
}

impl TokenConstraint for Residues {
    fn start(&self) -> Box<dyn ConstraintMatcher> {
        Box::new(Residues {
            modulus: self.modulus,
            residue: self.residue,
        })
    }
}

impl ConstraintMatcher for Residues {
    fn fill_next_mask(&mut self, mask: &mut TokenMask) -> Result<(), ConstraintError> {
        for token in (self.residue..mask.words().len() as u32 * 32).step_by(self.modulus as usize) {
            mask.allow(token);
        }
        Ok(())
    }

    fn accept(&mut self, token_id: u32) -> Result<(), ConstraintError> {
        if token_id % self.modulus != self.residue {
            return Err(ConstraintError::Failed(format!("{token_id} not allowed")));
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        false
    }
}

fn grammar_request(id: u64, sampling: SamplingParams) -> EngineRequest {
    let stop = StopConditions {
        ignore_eos: true,
        ..StopConditions::default()
    };
    let mut request = EngineRequest::new(RequestId(id), vec![1, 2, 3], sampling, stop);
    request.constraint = Some(Arc::new(Residues {
        modulus: 7,
        residue: (id % 7) as u32,
    }));
    request
}

#[test]
fn grammar_rows_on_gpu_logits_follow_their_grammar_as_on_the_cpu() {
    let Some(gpu) = crate::gpu() else { return };
    let vocab = 32_000;
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let params = |i: u64| match i % 2 {
        0 => SamplingParams::greedy(),
        _ => SamplingParams {
            temperature: 0.9,
            top_p: 0.9,
            seed: Some(i),
            ..SamplingParams::default()
        },
    };
    let ids: Vec<RequestId> = (0..8).map(RequestId).collect();
    let new_sampler = || {
        let mut sampler = BatchSampler::new(vec![0], vocab);
        (0..8).for_each(|i| sampler.add(&grammar_request(i, params(i))));
        sampler
    };
    let (mut on_gpu, mut on_cpu) = (new_sampler(), new_sampler());
    for step in 0..4 {
        let values: Vec<f32> = (0..8 * vocab)
            .map(|_| rng.random::<f32>() * 6.0 - 3.0)
            .collect();
        let gpu_tokens = on_gpu
            .sample(
                &Tensor::from_vec(values.clone(), (8, vocab), &gpu).unwrap(),
                &ids,
            )
            .unwrap();
        let cpu_tokens = on_cpu
            .sample(
                &Tensor::from_vec(values, (8, vocab), &Device::Cpu).unwrap(),
                &ids,
            )
            .unwrap();
        for (i, (g, c)) in gpu_tokens.iter().zip(&cpu_tokens).enumerate() {
            assert_eq!(
                g.token_id % 7,
                i as u32 % 7,
                "request {i}, step {step}: outside its grammar"
            );
            assert!(
                g.constraint_failure.is_none() && !g.ends_constraint,
                "request {i}, step {step}"
            );
            if i % 2 == 0 {
                assert_eq!(g.token_id, c.token_id, "greedy request {i}, step {step}");
            }
        }
    }
}
