//! Offline generation benchmark: closed-loop concurrency over random prompts, fixed lengths.
//!
//! `cargo run --release -p pagoda-engine --example offline_bench -- MODEL [--concurrency 1,8]
//!  [--input-len 128] [--output-len 128] [--rounds 2] [--weight-format int8|f32|native]`
//! Prints one JSON line per concurrency level.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pagoda_engine::models::WeightFormat;
use pagoda_engine::{
    start_engine, EngineConfig, EngineHandle, EngineRequest, SamplingParams, StopConditions,
    TokenEvent,
};
use rand::{Rng, SeedableRng};

struct Args {
    model: PathBuf,
    concurrency: Vec<usize>,
    input_len: usize,
    output_len: usize,
    rounds: usize,
    weight_format: WeightFormat,
}

fn parse_args() -> Result<Args, String> {
    let mut raw = std::env::args().skip(1);
    let mut args = Args {
        model: PathBuf::from(raw.next().ok_or("usage: offline_bench MODEL [options]")?),
        concurrency: vec![1, 8],
        input_len: 128,
        output_len: 128,
        rounds: 2,
        weight_format: WeightFormat::default(),
    };
    while let Some(flag) = raw.next() {
        let value = raw.next().ok_or(format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--concurrency" => {
                args.concurrency = value
                    .split(',')
                    .map(|v| v.parse().map_err(|e| format!("{e}")))
                    .collect::<Result<_, _>>()?
            }
            "--input-len" => args.input_len = number()?,
            "--output-len" => args.output_len = number()?,
            "--rounds" => args.rounds = number()?,
            "--weight-format" => {
                args.weight_format = WeightFormat::parse(&value).ok_or("unknown weight format")?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

/// Per request: (time to first token, mean time per output token after the first).
fn run_one(
    handle: &EngineHandle,
    prompt: Vec<u32>,
    output_len: usize,
) -> Result<(Duration, Duration), String> {
    let stop = StopConditions::exact_length(output_len);
    let request = EngineRequest::new(
        handle.next_request_id(),
        prompt,
        SamplingParams::greedy(),
        stop,
    );
    let start = request.arrival;
    let mut stream = handle
        .validate(request)
        .and_then(|r| handle.submit(r))
        .map_err(|e| e.to_string())?;
    let (mut first, mut last, mut count) = (None, start, 0u32);
    while let Some(event) = stream.blocking_next() {
        match event {
            TokenEvent::Token(token) => {
                first.get_or_insert(token.at);
                last = token.at;
                count += 1;
            }
            TokenEvent::Finished { .. } => break,
            TokenEvent::Error(e) => return Err(e.to_string()),
            TokenEvent::PromptLogprobs(_) => {}
        }
    }
    let first = first.ok_or("no token generated")?;
    let tpot = (last - first) / count.saturating_sub(1).max(1);
    Ok((first - start, tpot))
}

fn bench_level(handle: &EngineHandle, args: &Args, concurrency: usize) -> Result<String, String> {
    let vocab = handle.info().model.vocab_size as u32;
    let started = Instant::now();
    let results: Vec<Result<Vec<(Duration, Duration)>, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..concurrency)
            .map(|worker| {
                scope.spawn(move || {
                    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(worker as u64);
                    (0..args.rounds)
                        .map(|_| {
                            let prompt = (0..args.input_len)
                                .map(|_| rng.random_range(100..vocab))
                                .collect();
                            run_one(handle, prompt, args.output_len)
                        })
                        .collect()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().map_err(|_| "worker panicked".to_string())?)
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let samples: Vec<(Duration, Duration)> =
        results.into_iter().collect::<Result<Vec<_>, _>>()?.concat();
    let num_output = samples.len() * args.output_len;
    let mean_ms = |f: fn(&(Duration, Duration)) -> Duration| {
        samples
            .iter()
            .map(|s| f(s).as_secs_f64() * 1e3)
            .sum::<f64>()
            / samples.len() as f64
    };
    Ok(format!(
        "{{\"concurrency\": {concurrency}, \"num_requests\": {}, \"input_len\": {}, \"output_len\": {}, \"weight_format\": \"{}\", \
         \"duration_s\": {elapsed:.2}, \"output_tokens_per_s\": {:.1}, \"mean_ttft_ms\": {:.1}, \"mean_tpot_ms\": {:.2}}}",
        samples.len(),
        args.input_len,
        args.output_len,
        args.weight_format.as_str(),
        num_output as f64 / elapsed,
        mean_ms(|s| s.0),
        mean_ms(|s| s.1),
    ))
}

fn main() -> Result<(), String> {
    pagoda_engine::cpu_threads::use_one_cpu_pool();
    let args = parse_args()?;
    let config = EngineConfig {
        weight_format: args.weight_format,
        max_model_len: Some(2048),
        ..EngineConfig::default()
    };
    let handle = start_engine(config, &args.model).map_err(|e| e.to_string())?;
    // Warm-up: one short request so that first-touch costs stay out of the numbers.
    run_one(&handle, vec![100; 8], 4)?;
    for &concurrency in &args.concurrency {
        println!("{}", bench_level(&handle, &args, concurrency)?);
    }
    handle.shutdown();
    Ok(())
}
