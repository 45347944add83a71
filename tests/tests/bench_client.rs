//! `pagoda-bench serve` and `merge` against the real `pagoda-server`, over HTTP: the mock engine
//! with known timings proves the client measures correctly; the default model proves exact token
//! counts; two clients merged equal their sum.

use pagoda_e2e::bench::{number, read_json, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::default_model;
use serde_json::Value;

/// The default model (the tests' tokenizer and the real server's model).
fn model_path() -> String {
    default_model().display().to_string()
}

fn serve_args<'a>(
    server: &'a ServerProcess,
    model: &'a str,
    out: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "serve",
        "--base-url",
        &server.base_url,
        "--tokenizer",
        model,
        "--disable-progress",
        "--save-result",
        "--result-dir",
        out,
    ];
    args.extend_from_slice(extra);
    args
}

/// Mock: TTFT 100 ms, TPOT 20 ms. The client must measure them: each is ≥ the configured value
/// (the server cannot be faster than its mock clock) and above it by no more than what the
/// serving path adds. On this machine the release server adds 0.2 ms per token
/// (docs/PERFORMANCE.md); a debug build on a shared 2-core machine adds about 1 ms per token and a
/// few ms to TTFT, so the tolerances are 20 ms on TTFT and 3 ms on TPOT/ITL: far below the
/// configured values, so a client that mis-measured (counted from the wrong instant, missed
/// chunks, mixed units) fails.
#[test]
fn the_client_measures_the_mocks_configured_ttft_and_tpot() {
    ensure_built();
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "100",
        "--mock-tpot-ms",
        "20",
        "--disable-log-requests",
    ]);
    let model = model_path();
    let dir = tempfile::tempdir().expect("temp dir");
    // A directory that does not exist yet: pagoda-bench creates it.
    let results = dir.path().join("results").join("mock");
    let out = results.display().to_string();
    let args = serve_args(
        &server,
        &model,
        &out,
        &[
            "--model",
            "mock",
            "--random-input-len",
            "32",
            "--random-output-len",
            "30",
            "--num-prompts",
            "20",
            "--request-rate",
            "10",
            "--result-filename",
            "mock.json",
            "--metric-percentiles",
            "50,99",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
        ],
    );
    run_bench_ok(&args);
    let result = read_json(&results.join("mock.json"));
    assert_eq!(number(&result, "completed"), 20.0);
    assert_eq!(number(&result, "total_output_tokens"), 600.0);
    let ttft = number(&result, "mean_ttft_ms");
    assert!(
        (100.0..120.0).contains(&ttft),
        "mean TTFT {ttft} ms, configured 100"
    );
    for key in ["mean_tpot_ms", "median_itl_ms"] {
        let value = number(&result, key);
        assert!(
            (19.8..23.0).contains(&value),
            "{key} {value} ms, configured 20"
        );
    }
    let e2el = number(&result, "mean_e2el_ms");
    let expected = 100.0 + 29.0 * 20.0;
    assert!(
        (expected..expected + 100.0).contains(&e2el),
        "mean E2EL {e2el} ms, expected ≈ {expected}"
    );
    let integrity = result
        .pointer("/pagoda/summary/integrity")
        .expect("integrity section");
    assert!(
        integrity
            .get("achieved_rate")
            .and_then(Value::as_f64)
            .is_some(),
        "{integrity}"
    );
}

/// The real model: a fixed-length random workload completes with exact token counts (prompts of
/// exactly 64 tokens by the model's tokenizer, 16 generated with ignore_eos), per request.
#[test]
fn a_fixed_length_workload_on_the_default_model_has_exact_token_counts() {
    ensure_built();
    let model = model_path();
    let server = ServerProcess::start(&["--model", &model, "--disable-log-requests"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let args = serve_args(
        &server,
        &model,
        &out,
        &[
            "--endpoint",
            "/v1/completions",
            "--random-input-len",
            "64",
            "--random-output-len",
            "16",
            "--num-prompts",
            "4",
            "--request-rate",
            "inf",
            "--save-detailed",
            "--result-filename",
            "real.json",
        ],
    );
    run_bench_ok(&args);
    let result = read_json(&dir.path().join("real.json"));
    assert_eq!(number(&result, "completed"), 4.0);
    assert_eq!(number(&result, "total_input_tokens"), 256.0);
    assert_eq!(number(&result, "total_output_tokens"), 64.0);
    for (key, expected) in [("input_lens", 64), ("output_lens", 16)] {
        let lens = result.get(key).and_then(Value::as_array).expect(key);
        assert_eq!(lens.len(), 4);
        assert!(
            lens.iter().all(|n| n.as_u64() == Some(expected)),
            "{key}: {lens:?}"
        );
    }
    let texts = result
        .get("generated_texts")
        .and_then(Value::as_array)
        .expect("generated_texts");
    assert_eq!(texts.len(), 4);
    assert!(
        texts
            .iter()
            .all(|t| t.as_str().is_some_and(|t| !t.is_empty())),
        "{texts:?}"
    );
    let sources = result
        .pointer("/pagoda/summary/token_count_sources")
        .expect("sources");
    assert_eq!(sources["num_server_usage"], 4, "{sources}");
}

/// Two client processes against one server, merged: the merged counts equal the sum, and the
/// merged result has every request.
#[test]
fn merging_two_clients_gives_the_totals_of_both() {
    ensure_built();
    let server = ServerProcess::start(&["--mock", "--mock-tpot-ms", "5", "--disable-log-requests"]);
    let model = model_path();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    for (client_id, file, num_prompts) in [("0", "a.json", "6"), ("1", "b.json", "9")] {
        let args = serve_args(
            &server,
            &model,
            &out,
            &[
                "--model",
                "mock",
                "--random-input-len",
                "16",
                "--random-output-len",
                "8",
                "--num-prompts",
                num_prompts,
                "--request-rate",
                "50",
                "--save-detailed",
                "--client-id",
                client_id,
                "--result-filename",
                file,
            ],
        );
        run_bench_ok(&args);
    }
    let merged_path = dir.path().join("merged.json");
    let a = dir.path().join("a.json").display().to_string();
    let b = dir.path().join("b.json").display().to_string();
    let merged_arg = merged_path.display().to_string();
    run_bench_ok(&["merge", &a, &b, "--output", &merged_arg]);
    let merged = read_json(&merged_path);
    assert_eq!(number(&merged, "completed"), 15.0);
    assert_eq!(number(&merged, "total_output_tokens"), 120.0);
    // Prompt tokens are the server's count (the mock's byte tokenizer, chat template included).
    let parts: Vec<Value> = ["a.json", "b.json"]
        .iter()
        .map(|f| read_json(&dir.path().join(f)))
        .collect();
    let sum = |key: &str| parts.iter().map(|p| number(p, key)).sum::<f64>();
    assert_eq!(
        number(&merged, "total_input_tokens"),
        sum("total_input_tokens")
    );
    assert!(number(&merged, "duration") >= number(&parts[1], "duration"));
}

/// `--lora-modules a,b --lora-assignment round-robin` against a server that serves `base`, `a`
/// and `b` (`--served-model-name`, so it accepts every name as `model`): the requests alternate
/// a, b, a, …, all succeed, and the result breaks the run down by adapter with the right counts.
#[test]
fn lora_modules_spread_the_requests_over_adapters_and_break_the_result_down() {
    ensure_built();
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-tpot-ms",
        "5",
        "--served-model-name",
        "base,a,b",
        "--disable-log-requests",
    ]);
    let model = model_path();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let args = serve_args(
        &server,
        &model,
        &out,
        &[
            "--model",
            "base",
            "--lora-modules",
            "a,b",
            "--lora-assignment",
            "round-robin",
            "--random-input-len",
            "16",
            "--random-output-len",
            "8",
            "--num-prompts",
            "5",
            "--request-rate",
            "50",
            "--save-detailed",
            "--result-filename",
            "lora.json",
        ],
    );
    let output = run_bench_ok(&args);
    let result = read_json(&dir.path().join("lora.json"));
    assert_eq!(number(&result, "completed"), 5.0);
    assert_eq!(result["model_id"], "base");
    assert_eq!(result["pagoda"]["run"]["lora"]["assignment"], "round-robin");
    let records = result
        .pointer("/pagoda/records")
        .and_then(Value::as_array)
        .expect("records");
    let models: Vec<&str> = records
        .iter()
        .map(|r| r["model"].as_str().expect("a model"))
        .collect();
    assert_eq!(models, ["a", "b", "a", "b", "a"]);
    let per_model = result
        .pointer("/pagoda/summary/per_model")
        .and_then(Value::as_object)
        .expect("per_model");
    assert_eq!(per_model.keys().collect::<Vec<_>>(), ["a", "b"]);
    for (name, completed) in [("a", 3), ("b", 2)] {
        let entry = &per_model[name];
        assert_eq!(entry["num_completed"], completed, "{name}: {entry}");
        assert_eq!(entry["num_failed"], 0, "{name}: {entry}");
        assert_eq!(
            entry["total_output_tokens"],
            completed * 8,
            "{name}: {entry}"
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Per model"), "{stdout}");
    assert!(stdout.contains("LoRA adapters:"), "{stdout}");
}
