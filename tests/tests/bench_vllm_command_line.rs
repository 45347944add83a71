//! A `vllm bench serve` command line runs unchanged against the real `pagoda-server` (mock
//! engine, API key on): vLLM's flag names and forms (`--header KEY=VALUE`, the sampling group,
//! `--served-model-name` beside a hub id in `--model`, `--input-len`, `--append-result`, its
//! no-op flags, `--probe-request-rate`), the key sent only as a header reaching the readiness check and discovery too.

use pagoda_e2e::bench::{number, read_json, run_bench_ok, serve_against_mock};
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

/// vLLM's `--no-oversample`: a dataset file with fewer requests than `--num-prompts` runs each
/// once; without the flag its requests repeat up to `--num-prompts`.
#[test]
fn no_oversample_runs_a_small_dataset_once() {
    ensure_built();
    let server = ServerProcess::start(&["--mock", "--disable-log-requests"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let prompts = dir.path().join("prompts.jsonl");
    let lines =
        ["one", "two", "three"].map(|p| format!("{{\"prompt\": \"{p}\", \"max_tokens\": 3}}\n"));
    std::fs::write(&prompts, lines.concat()).expect("writes");
    let out = dir.path().display().to_string();
    let completed = |extra: &[&str], name: &str| {
        let mut args = serve_against_mock(&server.base_url);
        let prompts = prompts.display().to_string();
        let flags = [
            "--dataset-name",
            "custom",
            "--dataset-path",
            &prompts,
            "--num-prompts",
            "8",
            "--save-result",
            "--result-dir",
            &out,
            "--result-filename",
            name,
        ];
        args.extend(flags.iter().chain(extra).map(|f| f.to_string()));
        run_bench_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        number(&read_json(&dir.path().join(name)), "completed")
    };
    assert_eq!(completed(&[], "oversampled.json"), 8.0);
    assert_eq!(completed(&["--no-oversample"], "once.json"), 3.0);
}
