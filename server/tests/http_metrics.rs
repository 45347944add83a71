//! `/metrics` of a running `pagoda-server` against the contract in `docs/metrics.md`: after
//! requests of known sizes every series moves by exactly what they imply, under both namespaces;
//! buckets, labels and number formats are vLLM's; `promtool` accepts the exposition.
//!
//! The server runs the mock engine (`--mock`: the real scheduler and KV manager, no model compute,
//! a byte tokenizer with one token per byte), so sizes are known and runs are fast.

mod common;

use std::process::Command;
use std::time::Duration;

use common::api::{chat_body, client, get, post_json, scrape, wait_for_metrics, SseReader};
use common::known_requests::{
    assert_known_deltas, engine_bases, send_known_completions, settled, MODEL, PAGODA_ONLY,
    ROUTER_ONLY,
};
use common::prom::{promtool_complaints, Histogram, Scrape};
use common::server::ServerProcess;
use reqwest::StatusCode;
use serde_json::json;

const SETTLE: Duration = Duration::from_secs(5);

/// A mock server serving [`MODEL`], with metrics under `namespace`.
fn start(namespace: &str, extra: &[&str]) -> ServerProcess {
    let mut args = vec![
        "--mock",
        "--served-model-name",
        MODEL,
        "--metrics-namespace",
        namespace,
    ];
    args.extend_from_slice(extra);
    ServerProcess::start(&args)
}

#[tokio::test]
async fn known_requests_move_every_series_by_what_they_imply() {
    let server = start("pagoda", &["--max-model-len", "1000"]);
    let client = client();
    let metrics = get(&client, &server.url("/metrics")).await;
    assert_eq!(
        metrics.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let before = Scrape::parse(&metrics.text());
    let totals = send_known_completions(&client, &server).await;
    let after = settled(&client, &server, &before, "pagoda", &totals).await;
    assert_known_deltas(&before, &after, "pagoda", &totals);

    // Token-count buckets: 1-2-5 up to and including max_model_len, written as Python writes them.
    let labels = [("model_name", MODEL)];
    let prompt_tokens = after.histogram("pagoda:request_prompt_tokens", &labels);
    let bounds: Vec<&str> = prompt_tokens
        .buckets
        .iter()
        .map(|(le, _)| le.as_str())
        .collect();
    let expected = [
        "1.0", "2.0", "5.0", "10.0", "20.0", "50.0", "100.0", "200.0", "500.0", "1000.0", "+Inf",
    ];
    assert_eq!(bounds, expected);
    // A fresh server; prompts of 5, 10 and 16 tokens.
    assert_eq!(prompt_tokens.bucket("2.0"), 0.0);
    assert_eq!(prompt_tokens.bucket("5.0"), 1.0);
    assert_eq!(prompt_tokens.bucket("10.0"), 2.0);
    assert_eq!(prompt_tokens.bucket("20.0"), 3.0);
    let e2e = after.histogram("pagoda:e2e_request_latency_seconds", &labels);
    assert_eq!(e2e.buckets[0].0, "0.3", "vLLM's default e2e buckets");
    assert!(
        e2e.buckets.iter().any(|(le, _)| le == "1.0"),
        "le=\"1.0\", as prometheus_client writes it"
    );
}

#[tokio::test]
async fn vllm_namespace_exports_the_same_series_under_vllm_names_only() {
    let server = start("vllm", &[]);
    let client = client();
    let before = scrape(&client, &server).await;
    let totals = send_known_completions(&client, &server).await;
    let after = settled(&client, &server, &before, "vllm", &totals).await;
    assert_known_deltas(&before, &after, "vllm", &totals);

    let foreign: Vec<&str> = after
        .names()
        .into_iter()
        .filter(|name| {
            !name.starts_with("vllm:")
                && !name.starts_with("http_")
                && !name.starts_with("pagoda_engine_stall")
                && !name.starts_with("pagoda_grammar_")
                && !name.starts_with("pagoda_structured_output_")
        })
        .collect();
    assert!(
        foreign.is_empty(),
        "series outside vllm:, http_, the watchdog's and the structured-output ones \
         (docs/metrics.md): {foreign:?}"
    );
    assert!(
        !after.text.contains("pagoda:"),
        "a pagoda: name in a vllm scrape"
    );

    // The same base names as the pagoda namespace, less the pagoda-only series, plus the
    // router contract's aliases and cache info.
    let pagoda_server = start("pagoda", &[]);
    let pagoda = scrape(&client, &pagoda_server).await;
    let mut expected = engine_bases(&pagoda, "pagoda");
    for only in PAGODA_ONLY {
        assert!(
            expected.remove(only),
            "pagoda-only series {only} missing from a pagoda scrape"
        );
    }
    expected.extend(ROUTER_ONLY.iter().map(|s| s.to_string()));
    assert_eq!(engine_bases(&after, "vllm"), expected);
    // Under the default namespace the routers' series are there too, with the same values.
    let router: Vec<String> = engine_bases(&pagoda, "vllm").into_iter().collect();
    let mut want: Vec<String> = [
        "kv_cache_usage_perc",
        "num_requests_running",
        "num_requests_waiting",
    ]
    .iter()
    .chain(&ROUTER_ONLY)
    .map(|s| s.to_string())
    .collect();
    want.sort();
    assert_eq!(
        router, want,
        "the router contract under --metrics-namespace pagoda"
    );
}

/// One completion on a server with a 100 ms mock TTFT; returns the scrape once it is recorded.
async fn scrape_after_a_timed_request(server: &ServerProcess) -> Scrape {
    let client = client();
    let body = json!({"prompt": "time me", "max_tokens": 3, "ignore_eos": true});
    let reply = post_json(&client, &server.url("/v1/completions"), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    wait_for_metrics(&client, server, SETTLE, |s| {
        s.sum("pagoda:time_to_first_token_seconds_count", &[]) == 1.0
            && s.sum("pagoda:e2e_request_latency_seconds_count", &[]) == 1.0
    })
    .await
}

fn bounds(histogram: &Histogram) -> Vec<&str> {
    histogram
        .buckets
        .iter()
        .map(|(le, _)| le.as_str())
        .collect()
}

#[tokio::test]
async fn ttft_follows_the_mock_delay() {
    let server = start("pagoda", &["--mock-ttft-ms", "100"]);
    let after = scrape_after_a_timed_request(&server).await;
    let ttft = after.histogram(
        "pagoda:time_to_first_token_seconds",
        &[("model_name", MODEL)],
    );
    assert!(
        ttft.sum / ttft.count >= 0.1,
        "mean TTFT {} s with a 100 ms mock TTFT",
        ttft.sum
    );
    // vLLM's default buckets: … 0.08, 0.1, 0.25 …
    assert_eq!(ttft.bucket("0.1"), 0.0, "TTFT {} s", ttft.sum);
    assert_eq!(ttft.bucket("0.25"), 1.0, "TTFT {} s", ttft.sum);
}

#[tokio::test]
async fn custom_buckets_are_exported_as_given() {
    let server = start(
        "pagoda",
        &[
            "--mock-ttft-ms",
            "100",
            "--ttft-buckets",
            "0.05,0.2,1",
            "--itl-buckets",
            "0.001,0.5",
            "--e2e-buckets",
            "0.25,2.5",
        ],
    );
    let after = scrape_after_a_timed_request(&server).await;
    let labels = [("model_name", MODEL)];
    let ttft = after.histogram("pagoda:time_to_first_token_seconds", &labels);
    assert_eq!(bounds(&ttft), ["0.05", "0.2", "1.0", "+Inf"]);
    assert!(
        ttft.sum / ttft.count >= 0.1,
        "mean TTFT {} s with a 100 ms mock TTFT",
        ttft.sum
    );
    assert_eq!(ttft.bucket("0.05"), 0.0);
    assert_eq!(
        ttft.bucket("0.2"),
        1.0,
        "a 100 ms TTFT lands in le=\"0.2\" (took {} s)",
        ttft.sum
    );
    let itl = after.histogram("pagoda:inter_token_latency_seconds", &labels);
    assert_eq!(bounds(&itl), ["0.001", "0.5", "+Inf"]);
    let tpot = after.histogram("pagoda:request_time_per_output_token_seconds", &labels);
    assert_eq!(bounds(&tpot), ["0.001", "0.5", "+Inf"]);
    for base in [
        "e2e_request_latency_seconds",
        "request_queue_time_seconds",
        "request_decode_time_seconds",
    ] {
        let histogram = after.histogram(&format!("pagoda:{base}"), &labels);
        assert_eq!(bounds(&histogram), ["0.25", "2.5", "+Inf"], "{base}");
    }
}

#[tokio::test]
async fn a_repeated_long_prompt_hits_the_prefix_cache() {
    let server = start("pagoda", &["--block-size", "16"]);
    let client = client();
    let prompt = "The quick brown fox jumps over the lazy dog. ".repeat(3); // 135 tokens
    let num_prompt = prompt.len() as f64;
    let before = scrape(&client, &server).await;
    let body = json!({"prompt": prompt, "max_tokens": 2, "ignore_eos": true});
    let first = post_json(&client, &server.url("/v1/completions"), &body)
        .await
        .json();
    let second = post_json(&client, &server.url("/v1/completions"), &body)
        .await
        .json();
    assert_eq!(
        first["usage"]["prompt_tokens_details"]["cached_tokens"], 0,
        "{first}"
    );
    let cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_f64()
        .expect("cached_tokens");
    assert!(
        cached >= 64.0 && cached < num_prompt,
        "second request's cached_tokens {cached}: {second}"
    );

    let after = wait_for_metrics(&client, &server, SETTLE, |s| {
        s.delta(&before, "pagoda:prefix_cache_queries_total", &[]) >= 2.0 * num_prompt
            && s.delta(&before, "pagoda:request_success_total", &[]) >= 2.0
    })
    .await;
    assert_eq!(
        after.delta(&before, "pagoda:prefix_cache_queries_total", &[]),
        2.0 * num_prompt
    );
    assert_eq!(
        after.delta(&before, "pagoda:prefix_cache_hits_total", &[]),
        cached
    );
    let computed = after.delta(
        &before,
        "pagoda:request_prefill_kv_computed_tokens_sum",
        &[],
    );
    assert_eq!(
        computed,
        2.0 * num_prompt - cached,
        "prompt tokens minus cached ones"
    );
    assert!(after.sum("pagoda:num_cached_kv_blocks", &[]) >= 4.0);
}

/// A failed sequence counts as `finished_reason="error"` (vLLM's name), streamed or not: a
/// streamed failure arrives after the 200 header, so this series is the only place it shows.
#[tokio::test]
async fn failed_sequences_count_as_finished_reason_error_streamed_or_not() {
    let server = start("vllm", &["--mock-fail-after-tokens", "2"]);
    let client = client();
    let url = server.url("/v1/chat/completions");
    let streamed = post_json(&client, &url, &chat_body("Hello", 8, true)).await;
    assert_eq!(streamed.status, StatusCode::OK);
    assert!(streamed.text().contains("\"error\""), "{}", streamed.text());
    let whole = post_json(&client, &url, &chat_body("Hello", 8, false)).await;
    assert_eq!(whole.status, StatusCode::INTERNAL_SERVER_ERROR);
    let after = scrape(&client, &server).await;
    let reason = |r: &str| after.sum("vllm:request_success_total", &[("finished_reason", r)]);
    assert_eq!(reason("error"), 2.0);
    assert_eq!(reason("stop") + reason("length") + reason("abort"), 0.0);
    assert_eq!(after.sum("http_requests_total", &[("status", "5xx")]), 1.0);
}

#[tokio::test]
async fn unmatched_routes_count_under_handler_none() {
    let server = start("pagoda", &[]);
    let client = client();
    for _ in 0..2 {
        assert_eq!(
            get(&client, &server.url("/v1/no-such-route")).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let after = scrape(&client, &server).await;
    let labels = [("handler", "none"), ("method", "GET"), ("status", "4xx")];
    assert_eq!(
        after.sum("http_requests_total", &labels),
        2.0,
        "docs/metrics.md: `none` for a request that matched no route"
    );
    let raw_paths: Vec<&str> = after
        .samples
        .iter()
        .filter_map(|s| s.labels.get("handler").map(String::as_str))
        .filter(|h| h.contains("no-such-route"))
        .collect();
    assert!(
        raw_paths.is_empty(),
        "raw paths must never become labels: {raw_paths:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_duration_covers_the_whole_stream() {
    let server = start("pagoda", &["--mock-tpot-ms", "40"]);
    let client = client();
    let body = json!({"messages": [{"role": "user", "content": "stream"}], "max_tokens": 25,
        "ignore_eos": true, "stream": true});
    let response = client
        .post(server.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await;
    let mut reader = SseReader::new(response.expect("answered"));
    let payloads = reader.rest().await.expect("the stream completes");
    assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));
    let labels = [("handler", "/v1/chat/completions"), ("method", "POST")];
    let after = wait_for_metrics(&client, &server, SETTLE, |s| {
        s.sum("http_request_duration_seconds_count", &labels) == 1.0
            && s.sum("pagoda:e2e_request_latency_seconds_count", &[]) == 1.0
    })
    .await;
    let e2e = after.value("pagoda:e2e_request_latency_seconds_sum", &[]);
    assert!(e2e >= 0.9, "25 tokens at 40 ms took {e2e} s end to end");
    let http = after.value("http_request_duration_seconds_sum", &labels);
    assert!(
        http >= 0.9,
        "docs/metrics.md: http_request_duration_seconds runs to the end of the response, streaming \
         included; a {e2e} s stream recorded {http} s"
    );
}

/// promtool (Debian package `prometheus`) must accept the exposition of both namespaces. The
/// lints pagoda cannot avoid are vLLM's own naming: engine series contain a colon, which the
/// Prometheus guidelines reserve for recording rules, and vLLM's `iteration_tokens_total` is a
/// histogram whose name ends in `_total`; those lints alone are tolerated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_accepts_the_exposition() {
    if Command::new("promtool").arg("--version").output().is_err() {
        if std::env::var_os("PAGODA_SKIP_PROMTOOL").is_some() {
            eprintln!("skipped: promtool missing and PAGODA_SKIP_PROMTOOL set");
            return;
        }
        panic!("promtool is missing: `apt-get install prometheus` (Debian), or set PAGODA_SKIP_PROMTOOL=1");
    }
    let client = client();
    for namespace in ["pagoda", "vllm"] {
        let server = start(namespace, &[]);
        let completion = json!({"prompt": "lint me", "max_tokens": 3, "ignore_eos": true});
        assert_eq!(
            post_json(&client, &server.url("/v1/completions"), &completion)
                .await
                .status,
            StatusCode::OK
        );
        let chat = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": true});
        let stream = client
            .post(server.url("/v1/chat/completions"))
            .json(&chat)
            .send()
            .await;
        SseReader::new(stream.expect("answered"))
            .rest()
            .await
            .expect("the stream completes");
        let bad = post_json(
            &client,
            &server.url("/v1/completions"),
            &json!({"prompt": []}),
        )
        .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        let exposition = wait_for_metrics(&client, &server, SETTLE, |s| {
            s.sum(&format!("{namespace}:request_success_total"), &[]) == 2.0
        })
        .await;
        let (code, complaints) = promtool_complaints(&exposition.text);
        // Both prefixes: the router contract's `vllm:` series are there under `pagoda` too.
        let (colon, other): (Vec<String>, Vec<String>) = complaints.into_iter().partition(|l| {
            (l.starts_with(&format!("{namespace}:")) || l.starts_with("vllm:"))
                && l.ends_with("metric names should not contain ':'")
        });
        // vLLM's one histogram named like a counter: kept for its dashboards, and only it.
        let histogram_named_total = format!(
            "{namespace}:iteration_tokens_total non-counter metrics should not have \"_total\" suffix"
        );
        let (vllm_name, other): (Vec<String>, Vec<String>) =
            other.into_iter().partition(|l| *l == histogram_named_total);
        assert_eq!(
            vllm_name.len(),
            1,
            "{namespace}: the one vLLM name promtool flags"
        );
        assert!(
            other.is_empty(),
            "{namespace}: promtool complains (exit {code:?}):\n{}",
            other.join("\n")
        );
        let router_families = if namespace == "pagoda" {
            engine_bases(&exposition, "vllm").len()
        } else {
            0
        };
        assert_eq!(
            colon.len(),
            engine_bases(&exposition, namespace).len() + router_families,
            "one colon lint per engine family"
        );
        assert!(
            code == Some(0) || code == Some(3),
            "promtool exit {code:?}: 0 clean, 3 lint only"
        );
    }
}
