//! Ground truth over real HTTP: `pagoda-server --request-timeline` writes one line per request,
//! `pagoda-bench serve` sends each request with its `x-request-id`, and `pagoda-bench align`
//! matches them, estimates the clock offset and compares the client's metrics with the server's.

use pagoda_e2e::bench::{read_json, run_bench, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::default_model;
use serde_json::Value;

fn quantile(alignment: &Value, metric: &str, side: &str, key: &str) -> f64 {
    let metrics = alignment["metrics"].as_array().expect("metrics");
    let found = metrics.iter().find(|m| m["name"] == metric).expect(metric);
    found[side][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{metric}.{side}.{key}: {found}"))
}

#[test]
fn the_client_lines_up_with_the_servers_timeline() {
    ensure_built();
    let dir = tempfile::tempdir().expect("temp dir");
    let timeline = dir.path().join("timeline.jsonl");
    let timeline_arg = timeline.display().to_string();
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "40",
        "--mock-tpot-ms",
        "10",
        "--disable-log-requests",
        "--request-timeline",
        &timeline_arg,
    ]);
    let out = dir.path().display().to_string();
    let model = default_model().display().to_string();
    run_bench_ok(&[
        "serve",
        "--base-url",
        &server.base_url,
        "--tokenizer",
        &model,
        "--model",
        "mock",
        "--disable-progress",
        "--save-detailed",
        "--result-dir",
        &out,
        "--result-filename",
        "run.json",
        "--random-input-len",
        "16",
        "--random-output-len",
        "12",
        "--num-prompts",
        "24",
        "--max-concurrency",
        "4",
        "--request-id-prefix",
        "e2e-",
    ]);
    let result = dir.path().join("run.json");
    let saved = read_json(&result);
    assert_eq!(
        saved.pointer("/pagoda/run/request_id_prefix"),
        Some(&Value::from("e2e-"))
    );
    // The server writes a line when each response is done; the last may lag the client by a
    // moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(&timeline)
        .unwrap_or_default()
        .lines()
        .count()
        < 24
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the timeline has fewer than 24 lines"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = dir.path().join("alignment.json");
    let result_arg = result.display().to_string();
    let output_arg = output.display().to_string();
    let printed = run_bench_ok(&[
        "align",
        &result_arg,
        "--server-timeline",
        &timeline_arg,
        "-o",
        &output_arg,
    ]);
    assert!(String::from_utf8_lossy(&printed.stdout).contains("Matched 24 of 24"));
    let alignment = read_json(&output);
    assert_eq!(alignment["num_matched"], 24);
    // Client and server share this machine's clock: the estimate must be within its bounds, and
    // those tight.
    let offset = &alignment["offset"];
    let lower = offset["lower_bound_s"].as_f64().expect("lower");
    let upper = offset["upper_bound_s"].as_f64().expect("upper");
    assert!(upper - lower < 0.02, "{offset}");
    // The server's TTFT includes the mock's 40 ms; the client's includes it and the transit.
    let server_ttft = quantile(&alignment, "ttft", "server", "p50_s");
    let client_ttft = quantile(&alignment, "ttft", "client", "p50_s");
    assert!(server_ttft >= 0.040, "server TTFT {server_ttft}");
    assert!(
        client_ttft >= server_ttft,
        "client {client_ttft} < server {server_ttft}"
    );
    assert!(
        client_ttft - server_ttft < 0.02,
        "client {client_ttft}, server {server_ttft}"
    );
    let server_itl = quantile(&alignment, "itl", "server", "p50_s");
    assert!(
        (0.0095..0.013).contains(&server_itl),
        "server ITL {server_itl}"
    );

    // A wrong prefix matches nothing: a clear error, not a comparison of nothing.
    let wrong = run_bench(&[
        "align",
        &result_arg,
        "--server-timeline",
        &timeline_arg,
        "--request-id-prefix",
        "nope-",
    ]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("--request-id-prefix"));
}
