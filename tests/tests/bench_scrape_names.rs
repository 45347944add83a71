//! The metric names pagoda-bench's `--scrape-metrics` reads (bench-client/src/analysis/scrape.rs) against
//! what `pagoda-server` really exports, in both namespaces: after a run against the mock, every
//! server-side statistic is found (none left `null` for want of its series) and the counters agree
//! with the client's own counts. A renamed or dropped series on either side fails here.
//!
//! With `--speculative-config`, the speculative-decoding counters are read too, and the saved
//! and printed acceptance equal the server's own counter deltas over the run.

use pagoda_e2e::bench::{number, read_json, run_bench_ok, serve_against_mock};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use serde_json::Value;

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

/// Prompt lookup with 4-token proposals: the mock's output text repeats (after ~230 bytes), so
/// long outputs find their own earlier text and proposals are accepted.
const SPECULATIVE_CONFIG: &str =
    r#"{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2,"prompt_lookup_max":3}"#;

/// Starts the mock under `namespace` (request logs off) with `extra` flags.
fn start_mock(namespace: &str, extra: &[&str]) -> ServerProcess {
    let flags = [
        "--mock",
        "--mock-ttft-ms",
        "20",
        "--mock-tpot-ms",
        "5",
        "--disable-log-requests",
        "--metrics-namespace",
        namespace,
    ];
    ServerProcess::start(&[&flags[..], extra].concat())
}

/// Runs `pagoda-bench serve` against `server` with `--scrape-metrics` and `flags` (the workload),
/// saving into `dir`; returns the saved result and the printed report.
fn run_scraped(server: &ServerProcess, dir: &tempfile::TempDir, flags: &[&str]) -> (Value, String) {
    let mut args = serve_against_mock(&server.base_url);
    let dir_arg = dir.path().display().to_string();
    let scrape = [
        "--scrape-metrics",
        &server.base_url,
        "--scrape-interval",
        "0.1",
        "--save-result",
        "--result-dir",
        &dir_arg,
        "--result-filename",
        "run.json",
    ];
    args.extend(flags.iter().chain(&scrape).map(|s| s.to_string()));
    let output = run_bench_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let result = read_json(&dir.path().join("run.json"));
    (result, String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn every_series_the_scraper_reads_is_exported_in_both_namespaces() {
    ensure_built();
    for namespace in ["pagoda", "vllm"] {
        let server = start_mock(namespace, &[]);
        let dir = tempfile::tempdir().expect("temp dir");
        let flags = [
            "--random-input-len",
            "64",
            "--random-output-len",
            "16",
            "--num-prompts",
            "12",
            "--max-concurrency",
            "4",
            "--ignore-eos",
        ];
        let (result, report) = run_scraped(&server, &dir, &flags);
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
        // No speculation: no section, no block.
        assert!(side.get("spec_decode").is_none(), "{side}");
        assert!(!report.contains("Speculative Decoding"), "{report}");
    }
}

/// The speculative-decoding counters at one scrape (summed over label sets).
#[derive(Debug, Clone, Default, PartialEq)]
struct SpecCounters {
    num_drafts: f64,
    num_draft_tokens: f64,
    num_accepted_tokens: f64,
    num_accepted_tokens_per_pos: Vec<f64>,
}

impl SpecCounters {
    fn scrape(server: &ServerProcess, namespace: &str) -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let text = runtime.block_on(async {
            let response = reqwest::get(server.url("/metrics"))
                .await
                .expect("/metrics");
            response.text().await.expect("its text")
        });
        let mut counters = Self::default();
        let prefix = format!("{namespace}:spec_decode_");
        for line in text.lines().filter_map(|line| line.strip_prefix(&prefix)) {
            let (series, value) = line.rsplit_once(' ').expect("name and value");
            let value: f64 = value.parse().expect("a number");
            let name = series.split('{').next().unwrap_or(series);
            match name {
                "num_drafts_total" => counters.num_drafts += value,
                "num_draft_tokens_total" => counters.num_draft_tokens += value,
                "num_accepted_tokens_total" => counters.num_accepted_tokens += value,
                "num_accepted_tokens_per_pos_total" => {
                    let position: usize = series
                        .split("position=\"")
                        .nth(1)
                        .and_then(|rest| rest.split('"').next()?.parse().ok())
                        .expect("a position label");
                    let per_pos = &mut counters.num_accepted_tokens_per_pos;
                    per_pos.resize(per_pos.len().max(position + 1), 0.0);
                    per_pos[position] += value;
                }
                other => panic!("an unknown series {namespace}:spec_decode_{other}"),
            }
        }
        counters
    }

    fn since(&self, earlier: &Self) -> Self {
        let per_pos = self.num_accepted_tokens_per_pos.iter().enumerate();
        Self {
            num_drafts: self.num_drafts - earlier.num_drafts,
            num_draft_tokens: self.num_draft_tokens - earlier.num_draft_tokens,
            num_accepted_tokens: self.num_accepted_tokens - earlier.num_accepted_tokens,
            num_accepted_tokens_per_pos: per_pos
                .map(|(p, v)| v - earlier.num_accepted_tokens_per_pos.get(p).unwrap_or(&0.0))
                .collect(),
        }
    }
}

/// Against `pagoda-server --mock --speculative-config …` in both namespaces: the saved
/// `server_side.spec_decode` holds the server's own counter deltas over the run (no readiness
/// request outside it), the rates derived from them, and the report prints the block.
#[test]
fn speculative_decoding_is_read_in_both_namespaces() {
    ensure_built();
    for namespace in ["pagoda", "vllm"] {
        let server = start_mock(namespace, &["--speculative-config", SPECULATIVE_CONFIG]);
        let before = SpecCounters::scrape(&server, namespace);
        let dir = tempfile::tempdir().expect("temp dir");
        let flags = [
            "--random-input-len",
            "64",
            "--random-output-len",
            "300",
            "--num-prompts",
            "8",
            "--max-concurrency",
            "4",
            "--ignore-eos",
            "--ready-check-timeout-sec",
            "0",
        ];
        let (result, report) = run_scraped(&server, &dir, &flags);
        let window = SpecCounters::scrape(&server, namespace).since(&before);
        let spec = &result["pagoda"]["server_side"]["spec_decode"];
        let field = |name: &str| {
            spec[name]
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: {spec}"))
        };
        assert_eq!(field("num_drafts"), window.num_drafts, "{namespace}");
        assert_eq!(field("num_draft_tokens"), window.num_draft_tokens);
        assert_eq!(field("num_accepted_tokens"), window.num_accepted_tokens);
        let per_pos: Vec<f64> = spec["num_accepted_tokens_per_pos"]
            .as_array()
            .expect("per position")
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        assert_eq!(per_pos, window.num_accepted_tokens_per_pos);
        assert_eq!(per_pos.len(), 4, "num_speculative_tokens positions");
        let rate = field("acceptance_rate");
        assert!(
            rate > 0.0 && rate <= 1.0,
            "{namespace}: acceptance rate {rate}"
        );
        // Rates went through JSON text: equal but for the parser's last bit.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
        let want = window.num_accepted_tokens / window.num_draft_tokens;
        assert!(close(rate, want), "{rate} vs {want}");
        let length = field("mean_acceptance_length");
        let want = 1.0 + window.num_accepted_tokens / window.num_drafts;
        assert!(close(length, want), "{length} vs {want}");
        let rates = spec["per_position_acceptance_rate"]
            .as_array()
            .expect("rates");
        let first = rates[0].as_f64().expect("a rate");
        let want = per_pos[0] / window.num_drafts;
        assert!(close(first, want), "{first} vs {want}");
        assert!(report.contains("Speculative Decoding"), "{report}");
        let accepted = format!("{:<40} {}", "Accepted tokens:", window.num_accepted_tokens);
        assert!(report.contains(&accepted), "{accepted:?} in {report}");
        let rate_line = format!("{:<40} {:.2}", "Acceptance rate (%):", rate * 100.0);
        assert!(report.contains(&rate_line), "{rate_line:?} in {report}");
    }
}
