//! A `vllm bench serve` command line runs unchanged against the real `pagoda-server` (mock
//! engine, API key on): vLLM's flag names and forms (`--header KEY=VALUE`, the sampling group,
//! `--served-model-name` beside a hub id in `--model`, `--input-len`, `--append-result`, its
//! no-op flags, `--probe-request-rate`), the key sent only as a header reaching the readiness check and discovery too.

use pagoda_e2e::bench::{number, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::default_model;
use serde_json::Value;

#[test]
fn a_vllm_bench_serve_command_line_runs_and_appends_its_results() {
    ensure_built();
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "5",
        "--mock-tpot-ms",
        "1",
        "--api-key",
        "sesame",
        "--disable-log-requests",
    ]);
    let tokenizer = default_model().display().to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let args = [
        "serve",
        "--backend",
        "vllm",
        "--base-url",
        &server.base_url,
        "--endpoint",
        "/v1/completions",
        "--model",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "--served-model-name",
        "mock",
        "--tokenizer",
        &tokenizer,
        "--tokenizer-mode",
        "auto",
        "--trust-remote-code",
        "--header",
        "Authorization=Bearer sesame",
        "x-tenant=bench",
        "--ready-check-timeout-sec",
        "60",
        "--dataset-name",
        "random",
        "--input-len",
        "24",
        "--output-len",
        "6",
        "--num-prompts",
        "5",
        "--max-concurrency",
        "2",
        "--top-k",
        "20",
        "--min-p",
        "0.05",
        "--repetition-penalty",
        "1.1",
        "--presence-penalty",
        "0.2",
        "--logprobs",
        "1",
        "--ignore-eos",
        "--probe-request-rate",
        "20",
        "--disable-tqdm",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99",
        "--append-result",
        "--result-dir",
        &out,
        "--result-filename",
        "runs.jsonl",
    ];
    run_bench_ok(&args);
    run_bench_ok(&args);
    let text = std::fs::read_to_string(dir.path().join("runs.jsonl")).expect("the results");
    let runs: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON result per line"))
        .collect();
    assert_eq!(runs.len(), 2, "{text}");
    for run in &runs {
        assert_eq!(number(run, "completed"), 5.0, "{run}");
        assert_eq!(number(run, "total_output_tokens"), 30.0);
        assert!(run.get("p99_e2el_ms").and_then(Value::as_f64).is_some());
        // Probes answered beside the workload, with vLLM's keys.
        assert!(number(run, "probe_completed") >= 1.0, "{run}");
        assert_eq!(number(run, "probe_failed"), 0.0);
        assert!(number(run, "probe_median_e2el_ms") > 0.0);
    }
}
