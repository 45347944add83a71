//! `pagoda-bench serve --csv`, normally spread lengths and requests cancelled on purpose, against
//! the real `pagoda-server`'s mock engine (known timings, exact output lengths) over HTTP.

use std::collections::HashMap;

use pagoda_e2e::bench::{number, read_json, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::default_model;

/// Each row of the CSV as column → cell.
fn read_rows(path: &std::path::Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).expect("the CSV opens");
    let headers = reader.headers().expect("a header line").clone();
    reader
        .records()
        .map(|row| {
            let row = row.expect("a well-formed row");
            headers
                .iter()
                .zip(row.iter())
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

fn float(row: &HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|e| panic!("{column} = {:?}: {e}", row[column]))
}

/// The mock engine with a TTFT and a TPOT in ms.
fn mock_server(ttft_ms: &str, tpot_ms: &str) -> ServerProcess {
    let args = [
        "--mock",
        "--mock-ttft-ms",
        ttft_ms,
        "--mock-tpot-ms",
        tpot_ms,
    ];
    ServerProcess::start(&[&args[..], &["--disable-log-requests"]].concat())
}

/// `pagoda-bench serve` against `server`'s mock, with `extra` flags; must succeed.
fn bench_mock(server: &ServerProcess, extra: &[&str]) {
    let model = default_model().display().to_string();
    let mut args = vec![
        "serve",
        "--base-url",
        &server.base_url,
        "--tokenizer",
        &model,
        "--model",
        "mock",
        "--disable-progress",
    ];
    args.extend_from_slice(extra);
    run_bench_ok(&args);
}

/// Mock: TTFT 50 ms, TPOT 10 ms. Two runs of 12 requests with normally spread lengths: the CSV
/// has one row per request of each run, its latencies add up to the mock's, its token counts are
/// the result's totals, and the lengths vary.
#[test]
fn the_csv_has_a_row_per_request_that_adds_up_to_the_result() {
    ensure_built();
    let server = mock_server("50", "10");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let csv_path = dir.path().join("requests.csv");
    let csv_arg = csv_path.display().to_string();
    bench_mock(
        &server,
        &[
            "--save-result",
            "--result-dir",
            &out,
            "--result-filename",
            "r.json",
            "--random-input-len",
            "64",
            "--random-input-len-stddev",
            "20",
            "--random-output-len",
            "12",
            "--random-output-len-stddev",
            "4",
            "--num-prompts",
            "12",
            "--max-concurrency",
            "4",
            "--num-runs",
            "2",
            "--csv",
            &csv_arg,
        ],
    );
    let rows = read_rows(&csv_path);
    assert_eq!(rows.len(), 24, "12 requests in each of 2 runs");
    let last_run: Vec<_> = rows.iter().filter(|r| r["run"] == "2").collect();
    assert_eq!(last_run.len(), 12);
    // The saved result is the last run's: its totals are the sum of its rows.
    let result = read_json(&dir.path().join("r.json"));
    let sum = |column: &str| last_run.iter().map(|r| float(r, column)).sum::<f64>();
    assert_eq!(sum("input_tokens"), number(&result, "total_input_tokens"));
    assert_eq!(sum("output_tokens"), number(&result, "total_output_tokens"));
    for row in &rows {
        assert_eq!(row["error"], "", "{row:?}");
        assert_eq!(row["output_tokens"], row["expected_output_tokens"]);
        let ttft = float(row, "ttft_ms");
        assert!((50.0..150.0).contains(&ttft), "TTFT {ttft} ms, mock 50");
        let e2el = float(row, "e2el_ms");
        assert!(e2el >= ttft);
        let num_gaps = float(row, "output_tokens") - 1.0;
        if num_gaps > 0.0 {
            // The mock emits each token at least 10 ms after the previous one, so the request
            // lasts at least 50 + 10 per gap; a first token read late shortens the client's
            // TPOT (it is the mean gap after the first token), never that total.
            let tpot = float(row, "tpot_ms");
            assert!(
                (tpot * num_gaps + ttft - e2el).abs() < 0.01,
                "TPOT {tpot} ms is the mean gap after the first token: {row:?}"
            );
            assert!(
                e2el >= 50.0 + 10.0 * num_gaps,
                "e2el {e2el} ms, mock 50 + 10 x {num_gaps}"
            );
            assert!(tpot < 20.0, "TPOT {tpot} ms, mock 10");
        }
    }
    let distinct = |column: &str| {
        let values: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r[column].as_str()).collect();
        values.len()
    };
    assert!(distinct("input_tokens") > 3, "prompt lengths spread");
    assert!(distinct("output_tokens") > 2, "output lengths spread");
}

/// Requests the server counted as aborted (`finished_reason="abort"`).
fn num_aborted(server: &ServerProcess) -> f64 {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let text = runtime.block_on(async {
        let response = reqwest::get(server.url("/metrics"))
            .await
            .expect("/metrics");
        response.text().await.expect("its text")
    });
    text.lines()
        .filter(|line| line.starts_with("pagoda:request_success_total{"))
        .filter(|line| line.contains("finished_reason=\"abort\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Mock: 60 tokens take ~0.6 s. Half the requests (by the seed) are cancelled 0.25 s after
/// their send: they end then, as `cancelled`, without their whole output; the others are whole;
/// the server counts exactly the cancelled ones as aborted; the run still exits 0.
#[test]
fn cancelled_requests_end_on_time_and_the_server_aborts_exactly_them() {
    ensure_built();
    let server = mock_server("20", "10");
    let dir = tempfile::tempdir().expect("temp dir");
    let csv_path = dir.path().join("cancel.csv");
    let csv_arg = csv_path.display().to_string();
    bench_mock(
        &server,
        &[
            "--random-input-len",
            "32",
            "--random-output-len",
            "60",
            "--num-prompts",
            "20",
            "--max-concurrency",
            "5",
            "--request-cancellation-rate",
            "50",
            "--request-cancellation-delay",
            "0.25",
            "--max-failure-rate",
            "0",
            "--csv",
            &csv_arg,
        ],
    );
    let rows = read_rows(&csv_path);
    assert_eq!(rows.len(), 20);
    let (cancelled, whole): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r["error"] == "cancelled");
    assert!(
        (3..=17).contains(&cancelled.len()),
        "about half cancelled: {}",
        cancelled.len()
    );
    for row in &cancelled {
        let e2el = float(row, "e2el_ms");
        assert!(
            (250.0..450.0).contains(&e2el),
            "cancelled at {e2el} ms, asked 250"
        );
        assert!(float(row, "output_tokens") < 60.0, "{row:?}");
    }
    for row in &whole {
        assert_eq!(row["error"], "", "{row:?}");
        assert_eq!(row["output_tokens"], "60");
    }
    // The server saw each cancelled client go (a disconnect) and aborted its request.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while num_aborted(&server) < cancelled.len() as f64 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(num_aborted(&server), cancelled.len() as f64);
}
