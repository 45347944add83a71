//! `pagoda-bench serve --csv` and normally spread lengths, against the real `pagoda-server`'s
//! mock engine (known timings, exact output lengths) over HTTP.

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

/// Mock: TTFT 50 ms, TPOT 10 ms. Two runs of 12 requests with normally spread lengths: the CSV
/// has one row per request of each run, its latencies are the mock's, its token counts are the
/// result's totals, and the lengths vary.
#[test]
fn the_csv_has_a_row_per_request_that_adds_up_to_the_result() {
    ensure_built();
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "50",
        "--mock-tpot-ms",
        "10",
        "--disable-log-requests",
    ]);
    let model = default_model().display().to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let csv_path = dir.path().join("requests.csv");
    let csv_arg = csv_path.display().to_string();
    run_bench_ok(&[
        "serve",
        "--base-url",
        &server.base_url,
        "--tokenizer",
        &model,
        "--model",
        "mock",
        "--disable-progress",
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
    ]);
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
        if float(row, "output_tokens") > 1.0 {
            let tpot = float(row, "tpot_ms");
            assert!((9.9..20.0).contains(&tpot), "TPOT {tpot} ms, mock 10");
        }
        assert!(float(row, "e2el_ms") >= ttft);
    }
    let distinct = |column: &str| {
        let values: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r[column].as_str()).collect();
        values.len()
    };
    assert!(distinct("input_tokens") > 3, "prompt lengths spread");
    assert!(distinct("output_tokens") > 2, "output lengths spread");
}
