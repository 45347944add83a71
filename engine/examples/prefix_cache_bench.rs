//! Time to first token with a long shared prefix, prefix cache on vs off.
//!
//! `cargo run --release -p pagoda-engine --example prefix_cache_bench -- MODEL [--prefix-len 2048]
//!  [--suffix-len 128] [--repeats 3]` prints one JSON line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pagoda_engine::{
    start_engine, EngineConfig, EngineHandle, EngineRequest, SamplingParams, StopConditions,
    TokenEvent,
};
use rand::{Rng, SeedableRng};

fn ttft(handle: &EngineHandle, prompt: Vec<u32>) -> Result<Duration, String> {
    let stop = StopConditions::exact_length(1);
    let request = EngineRequest::new(
        handle.next_request_id(),
        prompt,
        SamplingParams::greedy(),
        stop,
    );
    let sent = request.arrival;
    let mut stream = handle
        .validate(request)
        .and_then(|r| handle.submit(r))
        .map_err(|e| e.to_string())?;
    match stream.blocking_next() {
        Some(TokenEvent::Token(token)) => Ok(token.at - sent),
        Some(TokenEvent::Error(e)) => Err(e.to_string()),
        other => Err(format!("no token: {other:?}")),
    }
}

fn mean_ttft_ms(
    model: &Path,
    caching: bool,
    prefix: &[u32],
    suffixes: &[Vec<u32>],
) -> Result<f64, String> {
    let config = EngineConfig {
        enable_prefix_caching: caching,
        ..EngineConfig::default()
    };
    let handle = start_engine(config, model).map_err(|e| e.to_string())?;
    // Warm-up, which also fills the cache with the prefix when caching is on.
    ttft(&handle, [prefix, &suffixes[0]].concat())?;
    let mut total = Duration::ZERO;
    for suffix in &suffixes[1..] {
        total += ttft(&handle, [prefix, suffix].concat())?;
    }
    let stats = handle.stats();
    handle.shutdown();
    eprintln!(
        "caching={caching}: prefix-cache hits {} of {} queried tokens",
        stats.prefix_cache_hits_tokens_total, stats.prefix_cache_queries_tokens_total
    );
    Ok(total.as_secs_f64() * 1e3 / (suffixes.len() - 1) as f64)
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let model = PathBuf::from(
        args.next()
            .ok_or("usage: prefix_cache_bench MODEL [options]")?,
    );
    let (mut prefix_len, mut suffix_len, mut repeats) = (2048usize, 128usize, 3usize);
    while let Some(flag) = args.next() {
        let value: usize = args
            .next()
            .ok_or("missing value")?
            .parse()
            .map_err(|e| format!("{flag}: {e}"))?;
        match flag.as_str() {
            "--prefix-len" => prefix_len = value,
            "--suffix-len" => suffix_len = value,
            "--repeats" => repeats = value,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut tokens =
        |n: usize| -> Vec<u32> { (0..n).map(|_| rng.random_range(100..49_000)).collect() };
    let prefix = tokens(prefix_len);
    let suffixes: Vec<Vec<u32>> = (0..=repeats).map(|_| tokens(suffix_len)).collect();
    let uncached = mean_ttft_ms(&model, false, &prefix, &suffixes)?;
    let cached = mean_ttft_ms(&model, true, &prefix, &suffixes)?;
    println!(
        "{{\"prefix_len\": {prefix_len}, \"suffix_len\": {suffix_len}, \"repeats\": {repeats}, \
         \"mean_ttft_uncached_ms\": {uncached:.1}, \"mean_ttft_cached_ms\": {cached:.1}, \"speedup\": {:.2}}}",
        uncached / cached
    );
    Ok(())
}
