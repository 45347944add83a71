//! `pagoda-bench serve` against the real `pagoda-server --mock`, over HTTP: time slices partition
//! the run, and the exit status says when a run failed (every request failed, too many failed, or
//! no server), after the result was saved.

use pagoda_e2e::bench::{number, read_json, run_bench, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::prometheus::free_port;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::default_model;
use serde_json::Value;

fn mock_server() -> ServerProcess {
    ensure_built();
    ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "20",
        "--mock-tpot-ms",
        "5",
        "--disable-log-requests",
    ])
}

/// `serve` arguments for a short run of `num_prompts` against `base_url`, saved as `name` in `dir`.
fn serve_args(base_url: &str, dir: &str, name: &str, num_prompts: &str) -> Vec<String> {
    let model = default_model().display().to_string();
    [
        "serve",
        "--base-url",
        base_url,
        "--tokenizer",
        &model,
        "--disable-progress",
        "--save-result",
        "--result-dir",
        dir,
        "--result-filename",
        name,
        "--random-input-len",
        "16",
        "--random-output-len",
        "8",
        "--num-prompts",
        num_prompts,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run(args: &[String], extra: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend_from_slice(extra);
    run_bench(&all)
}

#[test]
fn slices_partition_the_run_in_the_report_and_the_result() {
    let server = mock_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let mut args = serve_args(&server.base_url, &out, "sliced.json", "60");
    args.extend(
        [
            "--model",
            "mock",
            "--request-rate",
            "30",
            "--slice-duration",
            "0.5",
        ]
        .map(String::from),
    );
    let output = run_bench_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Time slices of 0.5 s"), "{stdout}");

    let result = read_json(&dir.path().join("sliced.json"));
    let sliced = result.pointer("/pagoda/slices").expect("pagoda.slices");
    assert_eq!(sliced["slice_duration_s"], 0.5);
    let slices = sliced["slices"].as_array().expect("slices");
    // 60 requests at 30/s: about 2 s of sending, so several slices.
    assert!(slices.len() >= 3, "{} slices", slices.len());
    let sum = |key: &str| -> f64 { slices.iter().map(|s| s[key].as_f64().unwrap_or(0.0)).sum() };
    assert_eq!(sum("num_requests"), 60.0);
    assert_eq!(sum("num_completed"), number(&result, "completed"));
    assert_eq!(
        sum("total_output_tokens"),
        number(&result, "total_output_tokens")
    );
    for slice in slices {
        let ttft = slice["median_ttft_ms"].as_f64();
        // Every slice where requests were sent has the mock's TTFT (20 ms) or more.
        if slice["num_requests"].as_f64() > Some(0.0) {
            assert!(ttft.is_some_and(|t| t >= 20.0), "{slice}");
        }
    }
}

#[test]
fn a_run_where_every_request_fails_exits_non_zero_after_saving() {
    let server = mock_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    // The server answers 404 to a model it does not serve: every request fails.
    let args = serve_args(&server.base_url, &out, "failed.json", "6");
    let output = run(&args, &["--model", "no-such-model"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("every request failed"), "{stderr}");
    assert!(stderr.contains("6 × http_404"), "{stderr}");
    let result = read_json(&dir.path().join("failed.json"));
    assert_eq!(number(&result, "failed"), 6.0);
}

#[test]
fn the_failure_rate_limit_decides_the_exit_status() {
    let server = mock_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    // Round-robin over the served model and one it does not serve: half of the requests fail.
    let args = serve_args(&server.base_url, &out, "half.json", "8");
    let half = [
        "--lora-modules",
        "mock,no-such-adapter",
        "--lora-assignment",
        "round-robin",
    ];
    let tolerant = run(&args, &[&half[..], &["--max-failure-rate", "0.6"]].concat());
    assert!(tolerant.status.success(), "50% failed, 60% allowed");
    let result: Value = read_json(&dir.path().join("half.json"));
    assert_eq!(number(&result, "failed"), 4.0);
    let strict = run(&args, &[&half[..], &["--max-failure-rate", "0.1"]].concat());
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--max-failure-rate 0.1"), "{stderr}");
}

#[test]
fn no_server_is_a_failed_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let url = format!("http://127.0.0.1:{}", free_port());
    let args = serve_args(&url, &out, "none.json", "2");
    let output = run(&args, &["--model", "mock", "--ready-timeout", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not ready"), "{stderr}");
}

/// Finished requests the server counted (every `finished_reason`).
async fn num_finished(client: &reqwest::Client, server: &ServerProcess) -> f64 {
    let text = match client.get(server.url("/metrics")).send().await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => return 0.0,
    };
    text.lines()
        .filter(|line| line.starts_with("pagoda:request_success_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Ctrl-C (SIGINT) during a run stops the sending, lets the requests in flight finish, and still
/// writes the result (what was sent, `pagoda.interrupted`); the exit status is 1.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_writes_the_result_of_what_was_sent() {
    let server = mock_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let mut args = serve_args(&server.base_url, &out, "interrupted.json", "200");
    args.extend(
        [
            "--model",
            "mock",
            "--request-rate",
            "10",
            "--num-warmups",
            "0",
        ]
        .map(String::from),
    );
    let mut bench = std::process::Command::new(pagoda_e2e::binaries::binary_path("pagoda-bench"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("pagoda-bench starts");
    // Interrupt once a few requests have finished (the run is 20 s long at 10 per second).
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while num_finished(&client, &server).await < 3.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &bench.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = bench.wait().expect("pagoda-bench exits");
    assert_eq!(status.code(), Some(1), "interrupted: {status}");
    let result = read_json(&dir.path().join("interrupted.json"));
    assert_eq!(
        result.pointer("/pagoda/interrupted"),
        Some(&Value::Bool(true))
    );
    let completed = number(&result, "completed");
    assert!((3.0..200.0).contains(&completed), "{completed} of 200");
    assert_eq!(
        number(&result, "failed"),
        0.0,
        "the requests in flight finished"
    );
}
