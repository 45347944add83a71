//! The known requests of `http_metrics.rs`: completions of known sizes on the mock engine, and
//! every change to `/metrics` they imply (docs/metrics.md), checked under either namespace.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::json;

use super::api::{post_json, wait_for_metrics};
use super::prom::Scrape;
use super::server::ServerProcess;

/// The served model name the servers are started with (`--served-model-name`).
pub const MODEL: &str = "metrics-test-model";
const SETTLE: Duration = Duration::from_secs(5);
/// (prompt, max_tokens) of the known requests.
pub const KNOWN: [(&str, u64); 3] = [("alpha", 4), ("beta gamma", 7), ("the third prompt", 9)];
/// Series only `--metrics-namespace pagoda` exports (docs/metrics.md, "Pagoda-only series").
pub const PAGODA_ONLY: [&str; 10] = [
    "num_kv_blocks",
    "num_kv_blocks_used",
    "num_cached_kv_blocks",
    "prefix_cache_evictions_total",
    "computed_tokens_total",
    "engine_steps_total",
    "itl_target_seconds",
    "prefill_token_cost_seconds",
    "kv_event_batches_total",
    "kv_event_batches_dropped_total",
];

/// The router contract's `vllm:` series that vLLM's own set lacks (docs/metrics.md § Router
/// contract), exported under both namespaces.
pub const ROUTER_ONLY: [&str; 4] = [
    "cache_config_info",
    "gpu_cache_usage_perc",
    "gpu_prefix_cache_hits_total",
    "gpu_prefix_cache_queries_total",
];

/// What the known requests add up to.
pub struct Totals {
    pub num_requests: f64,
    pub prompt_tokens: f64,
    pub generation_tokens: f64,
    pub inter_token_gaps: f64,
}

/// Sends the known completions one after the other (checking each prompt's length with
/// `/tokenize` and each response's usage) and returns their totals.
pub async fn send_known_completions(client: &Client, server: &ServerProcess) -> Totals {
    let mut totals = Totals {
        num_requests: 0.0,
        prompt_tokens: 0.0,
        generation_tokens: 0.0,
        inter_token_gaps: 0.0,
    };
    for (prompt, max_tokens) in KNOWN {
        let tokens = post_json(client, &server.url("/tokenize"), &json!({"prompt": prompt})).await;
        assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.text());
        let num_prompt = tokens.json()["count"].as_u64().expect("count");
        assert_eq!(
            num_prompt,
            prompt.len() as u64,
            "the byte tokenizer: one token per byte"
        );
        let body =
            json!({"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true});
        let reply = post_json(client, &server.url("/v1/completions"), &body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let response = reply.json();
        assert_eq!(response["model"], MODEL);
        assert_eq!(response["usage"]["prompt_tokens"], num_prompt, "{response}");
        assert_eq!(
            response["usage"]["completion_tokens"], max_tokens,
            "{response}"
        );
        totals.num_requests += 1.0;
        totals.prompt_tokens += num_prompt as f64;
        totals.generation_tokens += max_tokens as f64;
        totals.inter_token_gaps += (max_tokens - 1) as f64;
    }
    totals
}

/// Scrapes until the engine counters have caught up with `totals` (they are copied from the
/// engine after each step, so they may trail the responses by a moment).
pub async fn settled(
    client: &Client,
    server: &ServerProcess,
    before: &Scrape,
    ns: &str,
    totals: &Totals,
) -> Scrape {
    let generation = format!("{ns}:generation_tokens_total");
    wait_for_metrics(client, server, SETTLE, |s| {
        s.delta(before, &generation, &[]) >= totals.generation_tokens
            && s.sum(&format!("{ns}:num_requests_running"), &[]) == 0.0
    })
    .await
}

/// Every assertion about the known requests, under namespace `ns`.
pub fn assert_known_deltas(before: &Scrape, after: &Scrape, ns: &str, totals: &Totals) {
    let labels = [("model_name", MODEL), ("engine", "0")];
    let name = |base: &str| format!("{ns}:{base}");
    let delta = |base: &str, extra: &[(&str, &str)]| {
        let mut wanted = labels.to_vec();
        wanted.extend_from_slice(extra);
        after.delta(before, &name(base), &wanted)
    };
    assert_eq!(
        delta("request_success_total", &[("finished_reason", "length")]),
        totals.num_requests
    );
    assert_eq!(
        delta("request_success_total", &[("finished_reason", "stop")]),
        0.0
    );
    assert_eq!(
        delta("request_success_total", &[("finished_reason", "abort")]),
        0.0
    );
    assert_eq!(
        delta("generation_tokens_total", &[]),
        totals.generation_tokens
    );
    assert_eq!(delta("prompt_tokens_total", &[]), totals.prompt_tokens);
    for histogram in [
        "time_to_first_token_seconds",
        "e2e_request_latency_seconds",
        "request_queue_time_seconds",
        "request_inference_time_seconds",
        "request_prefill_time_seconds",
        "request_decode_time_seconds",
        "request_time_per_output_token_seconds",
        "request_prompt_tokens",
        "request_generation_tokens",
        "request_prefill_kv_computed_tokens",
        "request_max_num_generation_tokens",
        "request_params_n",
        "request_params_max_tokens",
    ] {
        let count = delta(&format!("{histogram}_count"), &[]);
        assert_eq!(count, totals.num_requests, "{ns}:{histogram}_count");
    }
    assert!(delta("e2e_request_latency_seconds_sum", &[]) > 0.0);
    assert!(delta("time_to_first_token_seconds_sum", &[]) > 0.0);
    assert_eq!(
        delta("request_generation_tokens_sum", &[]),
        totals.generation_tokens
    );
    assert_eq!(
        delta("request_max_num_generation_tokens_sum", &[]),
        totals.generation_tokens
    );
    assert_eq!(
        delta("request_params_max_tokens_sum", &[]),
        totals.generation_tokens
    );
    assert_eq!(delta("request_params_n_sum", &[]), totals.num_requests);
    assert_eq!(
        delta("request_prompt_tokens_sum", &[]),
        totals.prompt_tokens
    );
    assert_eq!(
        delta("inter_token_latency_seconds_count", &[]),
        totals.inter_token_gaps
    );

    let completions = [("handler", "/v1/completions"), ("method", "POST")];
    let ok = [completions[0], completions[1], ("status", "2xx")];
    assert_eq!(
        after.delta(before, "http_requests_total", &ok),
        totals.num_requests
    );
    let tokenize = [
        ("handler", "/tokenize"),
        ("method", "POST"),
        ("status", "2xx"),
    ];
    assert_eq!(
        after.delta(before, "http_requests_total", &tokenize),
        totals.num_requests
    );
    let duration = after.delta(before, "http_request_duration_seconds_count", &completions);
    assert_eq!(duration, totals.num_requests);

    // Every engine series carries the served model name and engine "0".
    for sample in after
        .samples
        .iter()
        .filter(|s| s.name.starts_with(&format!("{ns}:")))
    {
        assert!(
            sample.has_labels(&labels),
            "{} lacks {labels:?}: {:?}",
            sample.name,
            sample.labels
        );
    }
    assert!(after.check_all_histograms() > 10);
    after.check_families_declared();
}

/// Engine base names (after `ns:`) in a scrape.
pub fn engine_bases(scrape: &Scrape, ns: &str) -> BTreeSet<String> {
    let prefix = format!("{ns}:");
    scrape
        .types
        .keys()
        .filter_map(|name| name.strip_prefix(&prefix).map(str::to_string))
        .collect()
}
