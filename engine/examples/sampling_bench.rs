//! Per-step sampling time: the step's logits in, one token per sequence out, at batch 1, 8 and
//! 32 with a 49,152- and a 128,256-token vocabulary: greedy, temperature 0.8 + top-p 0.95, and
//! temperature 0.8 alone (what a client that sets only `temperature` asks for).
//!
//! `cargo run --release -p pagoda-engine --example sampling_bench [-- --iterations 50]` prints a
//! table and one JSON line per case. Two paths, side by side in one run:
//! * `serial`: the sampling of the engine before sampling moved behind the runner — the
//!   scheduler thread took each sequence's row in turn through its own sampler (the same pipeline,
//!   one row after another, with a copy of the logits on the host);
//! * `batched`: `BatchSampler::sample`, what the model runner does now.

use std::time::Instant;

use candle_core::{Device, Tensor};
use pagoda_engine::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use pagoda_engine::sampling::{BatchSampler, SamplerScratch, SamplingContext, SequenceSampler};
use rand::{Rng, SeedableRng};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Logits shaped like a language model's: most tokens far below a few likely ones.
fn logits(num_rows: usize, vocab_size: usize, seed: u64) -> BoxResult<Tensor> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..num_rows * vocab_size)
        .map(|_| {
            let base: f32 = rng.random_range(-4.0..2.0);
            if rng.random_range(0..1000) == 0 {
                base + 12.0
            } else {
                base
            }
        })
        .collect();
    Ok(Tensor::from_vec(
        values,
        (num_rows, vocab_size),
        &Device::Cpu,
    )?)
}

/// The sampling modes measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Greedy,
    TopP,
    Temperature,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Greedy => "greedy",
            Mode::TopP => "t0.8_p0.95",
            Mode::Temperature => "t0.8",
        }
    }
}

fn params(mode: Mode, seed: u64) -> SamplingParams {
    let sampled = SamplingParams {
        temperature: 0.8,
        seed: Some(seed),
        ..SamplingParams::default()
    };
    match mode {
        Mode::Greedy => SamplingParams::greedy(),
        Mode::TopP => SamplingParams {
            top_p: 0.95,
            ..sampled
        },
        Mode::Temperature => sampled,
    }
}

fn median_us(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2] * 1e6
}

/// The old path: every row through its sequence's own sampler, one after another.
fn time_serial(logits: &Tensor, mode: Mode, iterations: usize) -> BoxResult<f64> {
    let (num_rows, vocab_size) = logits.dims2()?;
    let mut samplers: Vec<(SequenceSampler, SamplerScratch)> = (0..num_rows)
        .map(|i| {
            (
                SequenceSampler::new(&params(mode, i as u64), 0),
                SamplerScratch::default(),
            )
        })
        .collect();
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        let values = logits.flatten_all()?.to_vec1::<f32>()?;
        for (row, (sampler, scratch)) in samplers.iter_mut().enumerate() {
            let slice = &values[row * vocab_size..(row + 1) * vocab_size];
            sampler.sample(slice, &SamplingContext::default(), scratch)?;
        }
        times.push(started.elapsed().as_secs_f64());
    }
    Ok(median_us(times))
}

/// The new path: the whole batch through the runner's `BatchSampler`.
fn time_batched(logits: &Tensor, mode: Mode, iterations: usize) -> BoxResult<f64> {
    let (num_rows, vocab_size) = logits.dims2()?;
    let mut batch = BatchSampler::new(vec![0], vocab_size);
    let ids: Vec<RequestId> = (0..num_rows as u64).map(RequestId).collect();
    for &id in &ids {
        let stop = StopConditions {
            ignore_eos: true,
            ..StopConditions::default()
        };
        batch.add(&EngineRequest::new(id, vec![1], params(mode, id.0), stop));
    }
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        batch.sample(logits, &ids)?;
        times.push(started.elapsed().as_secs_f64());
    }
    Ok(median_us(times))
}

fn main() -> BoxResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let iterations = args
        .iter()
        .position(|a| a == "--iterations")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(50);
    println!(
        "{:>7} {:>6} {:>12} {:>12} {:>12} {:>8}",
        "vocab", "batch", "mode", "serial_us", "batched_us", "speedup"
    );
    for vocab_size in [49_152, 128_256] {
        for num_rows in [1, 8, 32] {
            let logits = logits(num_rows, vocab_size, 7)?;
            for mode in [Mode::Greedy, Mode::TopP, Mode::Temperature] {
                let serial = time_serial(&logits, mode, iterations)?;
                let batched = time_batched(&logits, mode, iterations)?;
                let mode = mode.label();
                println!(
                    "{vocab_size:>7} {num_rows:>6} {mode:>12} {serial:>12.1} {batched:>12.1} {:>7.2}x",
                    serial / batched
                );
                println!(
                    "{{\"bench\":\"sampling\",\"vocab_size\":{vocab_size},\"batch\":{num_rows},\
                     \"mode\":\"{mode}\",\"serial_us\":{serial:.1},\"batched_us\":{batched:.1},\
                     \"iterations\":{iterations}}}"
                );
            }
        }
    }
    Ok(())
}
