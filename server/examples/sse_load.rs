//! Closed-loop streaming load against an OpenAI-compatible server: N concurrent streams, each
//! sending the next request as soon as the previous one ends, for a fixed duration. Reports
//! streamed tokens/s, requests/s, TTFT and the gap between streamed tokens (ITL), as one JSON line.
//!
//! Used by `bench/serve_mock_cpu.sh` to measure the serving layer's own cost against
//! `pagoda-server --mock`: a bare closed loop with no schedule, kept so that those recorded
//! figures can be re-run exactly. `pagoda-bench` is the benchmark client for everything else.
//!
//! ```sh
//! cargo run --release -p pagoda-server --example sse_load -- \
//!     --url http://127.0.0.1:8000 --concurrency 64 --duration-s 10 --max-tokens 128
//! ```

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;

#[derive(Debug, Clone)]
struct Options {
    url: String,
    concurrency: usize,
    duration: Duration,
    max_tokens: usize,
    prompt: String,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        url: "http://127.0.0.1:8000".into(),
        concurrency: 1,
        duration: Duration::from_secs(10),
        max_tokens: 128,
        prompt: "Hello".into(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("{pair:?}: every flag takes a value"));
        };
        let number = || {
            value
                .parse::<f64>()
                .map_err(|_| format!("{flag}: {value:?} is not a number"))
        };
        match flag.as_str() {
            "--url" => options.url = value.clone(),
            "--concurrency" => options.concurrency = number()? as usize,
            "--duration-s" => options.duration = Duration::from_secs_f64(number()?),
            "--max-tokens" => options.max_tokens = number()? as usize,
            "--prompt" => options.prompt = value.clone(),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(options)
}

/// What one stream saw.
#[derive(Debug, Default)]
struct Tally {
    num_requests: usize,
    num_errors: usize,
    num_tokens: usize,
    ttfts_s: Vec<f64>,
    gaps_s: Vec<f64>,
}

async fn one_request(
    client: &reqwest::Client,
    options: &Options,
    tally: &mut Tally,
) -> Result<(), String> {
    let body = json!({"prompt": options.prompt, "max_tokens": options.max_tokens,
        "ignore_eos": true, "stream": true, "temperature": 0});
    let started = Instant::now();
    let response = client
        .post(format!("{}/v1/completions", options.url))
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    let mut stream = response.bytes_stream();
    let mut last: Option<Instant> = None;
    let mut pending = String::new();
    while let Some(chunk) = stream.next().await {
        pending.push_str(&String::from_utf8_lossy(&chunk.map_err(|e| e.to_string())?));
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            if !event.starts_with("data: {")
                || !event.contains("\"text\":\"")
                || event.contains("\"text\":\"\"")
            {
                continue;
            }
            let now = Instant::now();
            match last {
                None => tally.ttfts_s.push((now - started).as_secs_f64()),
                Some(previous) => tally.gaps_s.push((now - previous).as_secs_f64()),
            }
            last = Some(now);
            tally.num_tokens += 1;
        }
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary(name: &str, mut values: Vec<f64>) -> serde_json::Value {
    values.sort_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    json!({
        format!("mean_{name}_ms"): mean * 1e3,
        format!("p50_{name}_ms"): percentile(&values, 50.0) * 1e3,
        format!("p99_{name}_ms"): percentile(&values, 99.0) * 1e3,
    })
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let options = parse_options()?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(options.concurrency)
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let deadline = started + options.duration;
    let workers: Vec<_> = (0..options.concurrency)
        .map(|_| {
            let client = client.clone();
            let options = options.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                while Instant::now() < deadline {
                    match one_request(&client, &options, &mut tally).await {
                        Ok(()) => tally.num_requests += 1,
                        Err(_) => tally.num_errors += 1,
                    }
                }
                tally
            })
        })
        .collect();
    let mut total = Tally::default();
    for worker in workers {
        let tally = worker.await.map_err(|e| e.to_string())?;
        total.num_requests += tally.num_requests;
        total.num_errors += tally.num_errors;
        total.num_tokens += tally.num_tokens;
        total.ttfts_s.extend(tally.ttfts_s);
        total.gaps_s.extend(tally.gaps_s);
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let mut report = json!({
        "concurrency": options.concurrency, "max_tokens": options.max_tokens,
        "elapsed_s": elapsed_s, "num_requests": total.num_requests, "num_errors": total.num_errors,
        "num_tokens": total.num_tokens,
        "tokens_per_s": total.num_tokens as f64 / elapsed_s,
        "requests_per_s": total.num_requests as f64 / elapsed_s,
    });
    for (name, values) in [("ttft", total.ttfts_s), ("itl", total.gaps_s)] {
        if let (Some(map), serde_json::Value::Object(extra)) =
            (report.as_object_mut(), summary(name, values))
        {
            map.extend(extra);
        }
    }
    println!("{report}");
    Ok(())
}
