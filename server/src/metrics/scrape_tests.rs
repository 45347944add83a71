//! Whole scrapes: engine series against a real engine's stats, the exact set of names per
//! namespace, the HTTP series, and the documentation of every series.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use pagoda_engine::EngineHandle;

use super::test_support::*;
use super::*;

#[test]
fn engine_series_mirror_engine_stats() {
    let engine = TinyEngine::start();
    let metrics = metrics(MetricsNamespace::Pagoda, &engine);
    generate_shared_prefix_pair(&engine, &metrics);
    let stats = engine.stats();
    let scrape = Scrape::parse(&metrics.render());
    let value = |base: &str| scrape.value(&format!("pagoda:{base}"), &labels(&[]));

    assert_eq!(value("prompt_tokens_total"), 80.0);
    assert_eq!(value("generation_tokens_total"), 8.0);
    assert!(value("prefix_cache_hits_total") >= 32.0);
    let mirrored = [
        ("prompt_tokens_total", stats.num_prompt_tokens_total),
        ("generation_tokens_total", stats.num_generation_tokens_total),
        ("num_preemptions_total", stats.num_preemptions_total),
        (
            "prefix_cache_queries_total",
            stats.prefix_cache_queries_tokens_total,
        ),
        (
            "prefix_cache_hits_total",
            stats.prefix_cache_hits_tokens_total,
        ),
        (
            "prompt_tokens_cached_total",
            stats.prefix_cache_hits_tokens_total,
        ),
        (
            "prefix_cache_evictions_total",
            stats.num_prefix_cache_evictions_total,
        ),
        ("computed_tokens_total", stats.num_computed_tokens_total),
        ("engine_steps_total", stats.num_steps_total),
        ("kv_event_batches_total", stats.num_kv_event_batches_total),
        (
            "kv_event_batches_dropped_total",
            stats.num_kv_event_batches_dropped_total,
        ),
        ("num_kv_blocks", stats.num_kv_blocks_total as u64),
        ("num_kv_blocks_used", stats.num_kv_blocks_used as u64),
        ("num_cached_kv_blocks", stats.num_cached_kv_blocks as u64),
        ("num_requests_running", 0),
        ("num_requests_waiting", 0),
    ];
    for (base, want) in mirrored {
        assert_eq!(value(base), want as f64, "pagoda:{base}");
    }
    assert_eq!(value("kv_cache_usage_perc"), stats.kv_cache_usage());
    // Every step in the tokens-per-step histogram: two prefills (40, then 8 after the cache
    // hit) and six one-token decodes, each in its bucket.
    let steps = stats.num_steps_total as f64;
    assert_eq!(value("iteration_tokens_total_count"), steps);
    assert_eq!(
        value("iteration_tokens_total_sum"),
        stats.num_computed_tokens_total as f64
    );
    let bucket = |le: &str| {
        scrape.value(
            "pagoda:iteration_tokens_total_bucket",
            &labels(&[("le", le)]),
        )
    };
    assert_eq!(bucket("1.0"), steps - 2.0, "the decodes");
    assert_eq!(bucket("8.0"), steps - 1.0, "and the 8-token prefill");
    assert_eq!(bucket("64.0"), steps);
    assert_eq!(bucket("+Inf"), steps);

    // Request series from the same real events.
    let count = |base: &str| value(&format!("{base}_count"));
    assert_eq!(count("time_to_first_token_seconds"), 2.0);
    assert_eq!(count("inter_token_latency_seconds"), 6.0);
    assert_eq!(count("request_time_per_output_token_seconds"), 2.0);
    assert_eq!(value("request_generation_tokens_sum"), 8.0);
    assert_eq!(value("request_prefill_kv_computed_tokens_sum"), 80.0 - 32.0);

    // Scraping again adds nothing: the counters copy the engine's totals, they do not add them.
    assert_eq!(Scrape::parse(&metrics.render()).text(), scrape.text());
}

/// vLLM's names, written out here rather than taken from `names.rs`.
const VLLM_SERIES: [&str; 26] = [
    "vllm:e2e_request_latency_seconds",
    "vllm:generation_tokens_total",
    "vllm:inter_token_latency_seconds",
    "vllm:iteration_tokens_total",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prompt_tokens_cached_total",
    "vllm:prompt_tokens_total",
    "vllm:request_decode_time_seconds",
    "vllm:request_generation_tokens",
    "vllm:request_inference_time_seconds",
    "vllm:request_max_num_generation_tokens",
    "vllm:request_num_preemptions",
    "vllm:request_params_max_tokens",
    "vllm:request_params_n",
    "vllm:request_prefill_kv_computed_tokens",
    "vllm:request_prefill_time_seconds",
    "vllm:request_prompt_tokens",
    "vllm:request_queue_time_seconds",
    "vllm:request_success_total",
    "vllm:request_time_per_output_token_seconds",
    "vllm:time_to_first_token_seconds",
];

/// Series outside the engine namespace, exported under both.
/// The server's own series, the same in both namespaces (the structured-output request counter
/// appears once a request is counted).
const HTTP_SERIES: [&str; 7] = [
    "http_request_duration_highr_seconds",
    "http_request_duration_seconds",
    "http_requests_total",
    "pagoda_engine_stalled",
    "pagoda_engine_stalls_total",
    "pagoda_grammar_compile_seconds",
    "pagoda_grammar_mask_seconds",
];

const PAGODA_EXTRAS: [&str; 10] = [
    "pagoda:computed_tokens_total",
    "pagoda:engine_steps_total",
    "pagoda:itl_target_seconds",
    "pagoda:kv_event_batches_dropped_total",
    "pagoda:kv_event_batches_total",
    "pagoda:num_cached_kv_blocks",
    "pagoda:num_kv_blocks",
    "pagoda:num_kv_blocks_used",
    "pagoda:prefill_token_cost_seconds",
    "pagoda:prefix_cache_evictions_total",
];

/// The router contract's series vLLM's own set lacks (its deprecated aliases and the cache's
/// configuration), exported in both namespaces.
const ROUTER_EXTRAS: [&str; 4] = [
    "vllm:cache_config_info",
    "vllm:gpu_cache_usage_perc",
    "vllm:gpu_prefix_cache_hits_total",
    "vllm:gpu_prefix_cache_queries_total",
];

/// The `vllm:` series routers read that the `pagoda` namespace exports beside its own.
const ROUTER_GAUGES: [&str; 3] = [
    "vllm:kv_cache_usage_perc",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
];

/// A scrape after one of every kind of record.
fn full_scrape(namespace: MetricsNamespace, engine: &EngineHandle) -> Scrape {
    let metrics = metrics(namespace, engine);
    generate(engine, &metrics, vec![5, 6, 7], 2);
    metrics.record_request_params(1, 2);
    metrics.record_max_num_generation_tokens(2);
    let second = Duration::from_secs(1);
    metrics.record_http("/v1/completions", "POST", 200, second);
    Scrape::parse(&metrics.render())
}

fn expected_kind(name: &str) -> &'static str {
    let gauges = [
        "num_requests_running",
        "num_requests_waiting",
        "kv_cache_usage_perc",
        "engine_stalled",
        "itl_target_seconds",
        "prefill_token_cost_seconds",
        "gpu_cache_usage_perc",
        "cache_config_info",
    ];
    // vLLM's one histogram whose name ends in `_total`.
    if name.ends_with("iteration_tokens_total") {
        "histogram"
    } else if name.ends_with("_total") {
        "counter"
    } else if gauges.iter().any(|g| name.ends_with(g)) || name.starts_with("pagoda:num_") {
        "gauge"
    } else {
        "histogram"
    }
}

#[test]
fn each_namespace_exports_exactly_its_names() {
    let engine = TinyEngine::start();
    let vllm = full_scrape(MetricsNamespace::Vllm, &engine);
    let mut want: Vec<String> = VLLM_SERIES
        .iter()
        .chain(&ROUTER_EXTRAS)
        .chain(&HTTP_SERIES)
        .map(|s| s.to_string())
        .collect();
    want.sort();
    assert_eq!(vllm.family_names(), want);

    let pagoda = full_scrape(MetricsNamespace::Pagoda, &engine);
    let renamed = VLLM_SERIES.iter().map(|s| s.replace("vllm:", "pagoda:"));
    let extras = PAGODA_EXTRAS
        .iter()
        .chain(&ROUTER_EXTRAS)
        .chain(&ROUTER_GAUGES)
        .chain(&HTTP_SERIES)
        .map(|s| s.to_string());
    let mut want: Vec<String> = renamed.chain(extras).collect();
    want.sort();
    assert_eq!(pagoda.family_names(), want);

    for (name, kind) in vllm.types.iter().chain(&pagoda.types) {
        assert_eq!(kind, expected_kind(name), "# TYPE {name}");
    }
}

#[test]
fn http_series_group_statuses_and_skip_excluded_handlers() {
    let engine = TinyEngine::start();
    for namespace in NAMESPACES {
        let metrics = metrics(namespace, &engine);
        let chat = "/v1/chat/completions";
        let record = |handler, method, status, ms| {
            metrics.record_http(handler, method, status, Duration::from_millis(ms));
        };
        record(chat, "POST", 200, 300);
        record(chat, "POST", 201, 2000);
        record(chat, "POST", 400, 10);
        record(UNMATCHED_HANDLER, "GET", 404, 1);
        record("/metrics", "GET", 200, 1);
        record("/health", "GET", 200, 1);
        let scrape = Scrape::parse(&metrics.render());

        let requests = |handler, method, status| {
            let labels = [("handler", handler), ("method", method), ("status", status)];
            scrape.get("http_requests_total", &labels)
        };
        assert_eq!(requests(chat, "POST", "2xx"), Some(2.0));
        assert_eq!(requests(chat, "POST", "4xx"), Some(1.0));
        assert_eq!(requests("none", "GET", "4xx"), Some(1.0));
        assert_eq!(requests("/metrics", "GET", "2xx"), None);
        assert!(!scrape.text().contains("handler=\"/health\""));

        let duration = |le| {
            let labels = [("handler", chat), ("method", "POST"), ("le", le)];
            scrape.value("http_request_duration_seconds_bucket", &labels)
        };
        assert_eq!(
            (duration("0.1"), duration("0.5"), duration("1.0")),
            (1.0, 2.0, 2.0)
        );
        assert_eq!(duration("+Inf"), 3.0);
        assert_eq!(
            scrape.value("http_request_duration_highr_seconds_count", &[]),
            4.0
        );
        let highr_bucket = scrape.value(
            "http_request_duration_highr_seconds_bucket",
            &[("le", "0.01")],
        );
        assert_eq!(highr_bucket, 2.0);
    }
    assert_eq!(status_group(503), "5xx");
}

#[test]
fn label_values_are_escaped() {
    let engine = TinyEngine::start();
    let model_name = "org/\"quoted\"\\model\nname";
    let config = MetricsConfig {
        namespace: MetricsNamespace::Vllm,
        model_name: model_name.to_string(),
        max_model_len: 16,
        buckets: HistogramBuckets::default(),
    };
    let metrics = Metrics::new(config, (*engine).clone()).unwrap();
    let scrape = Scrape::parse(&metrics.render());
    let labels = [("model_name", model_name), ("engine", "0")];
    assert_eq!(scrape.value("vllm:num_requests_running", &labels), 0.0);
}

#[test]
fn every_exported_series_is_documented() {
    let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md");
    let doc = std::fs::read_to_string(doc_path).unwrap();
    let engine = TinyEngine::start();
    for namespace in NAMESPACES {
        for name in full_scrape(namespace, &engine).family_names() {
            assert!(
                doc.contains(&format!("`{name}`")),
                "{name} is not in docs/metrics.md"
            );
        }
    }
    for flag in [
        "--metrics-namespace",
        "--ttft-buckets",
        "--itl-buckets",
        "--e2e-buckets",
    ] {
        assert!(doc.contains(flag), "{flag} is not in docs/metrics.md");
    }
}
