//! The metric names pagoda-bench's `--scrape-metrics` reads (bench-client/src/scrape.rs) against
//! what `pagoda-server` really exports, in both namespaces: after a run against the mock, every
//! server-side statistic is found (none left `null` for want of its series) and the counters agree
//! with the client's own counts. A renamed or dropped series on either side fails here.

use pagoda_e2e::bench::{number, read_json, run_bench_ok, serve_against_mock};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;

/// Server-side statistics a run against pagoda-server always fills.
const FILLED: [&str; 19] = [
    "num_finished",
    "ttft_s",
    "itl_s",
    "tpot_s",
    "e2e_s",
    "queue_time_s",
    "prefill_time_s",
    "decode_time_s",
    "mean_queue_time_s",
    "peak_num_requests_waiting",
    "peak_num_requests_running",
    "peak_kv_cache_usage",
    "num_preemptions",
    "num_prompt_tokens",
    "num_generation_tokens",
    "prefix_cache_queries",
    "prefix_cache_hits",
    "prefix_cache_hit_rate",
    "timeline",
];

#[test]
fn every_series_the_scraper_reads_is_exported_in_both_namespaces() {
    ensure_built();
    for namespace in ["pagoda", "vllm"] {
        let server = ServerProcess::start(&[
            "--mock",
            "--mock-ttft-ms",
            "20",
            "--mock-tpot-ms",
            "5",
            "--disable-log-requests",
            "--metrics-namespace",
            namespace,
        ]);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut args = serve_against_mock(&server.base_url);
        let dir_arg = dir.path().display().to_string();
        let metrics_url = server.base_url.clone();
        args.extend(
            [
                "--random-input-len",
                "64",
                "--random-output-len",
                "16",
                "--num-prompts",
                "12",
                "--max-concurrency",
                "4",
                "--ignore-eos",
                "--scrape-metrics",
                &metrics_url,
                "--scrape-interval",
                "0.1",
                "--save-result",
                "--result-dir",
                &dir_arg,
                "--result-filename",
                "run.json",
            ]
            .map(String::from),
        );
        run_bench_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let result = read_json(&dir.path().join("run.json"));
        let side = &result["pagoda"]["server_side"];
        assert_eq!(side["namespace"], namespace, "{side}");
        for field in FILLED {
            let value = &side[field];
            let empty = value.is_null() || value.as_array().is_some_and(Vec::is_empty);
            assert!(!empty, "{namespace}: server_side.{field} not found: {side}");
        }
        let sample = &side["timeline"][0];
        for gauge in [
            "num_requests_running",
            "num_requests_waiting",
            "kv_cache_usage",
        ] {
            assert!(
                !sample[gauge].is_null(),
                "{namespace}: timeline {gauge}: {sample}"
            );
        }
        assert_eq!(
            side["num_finished"].as_f64(),
            Some(number(&result, "completed"))
        );
        assert_eq!(
            side["num_generation_tokens"].as_f64(),
            Some(number(&result, "total_output_tokens")),
            "{namespace}"
        );
    }
}
