//! The router contract (docs/metrics.md § Router contract): the `vllm:` series routers read,
//! with the engine's values, under both namespaces.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use pagoda_engine::{EngineRequest, SamplingParams, StopConditions};

use super::test_support::*;
use super::*;

/// What llm-d's endpoint picker, AIBrix and production-stack read, under both namespaces and
/// with the engine's values: the same as the namespace's own series, and the cache's real
/// block size and block count.
#[test]
fn router_series_carry_the_engines_values_in_both_namespaces() {
    let engine = TinyEngine::start();
    for namespace in NAMESPACES {
        let metrics = metrics(namespace, &engine);
        generate_shared_prefix_pair(&engine, &metrics);
        let stats = engine.stats();
        let info = engine.info();
        let scrape = Scrape::parse(&metrics.render());
        let vllm = |base: &str| scrape.value(&format!("vllm:{base}"), &labels(&[]));
        assert_eq!(vllm("num_requests_waiting"), 0.0);
        assert_eq!(vllm("num_requests_running"), 0.0);
        assert_eq!(vllm("kv_cache_usage_perc"), stats.kv_cache_usage());
        assert_eq!(vllm("gpu_cache_usage_perc"), stats.kv_cache_usage());
        let queries = stats.prefix_cache_queries_tokens_total as f64;
        let hits = stats.prefix_cache_hits_tokens_total as f64;
        assert!(hits >= 32.0 && queries >= 80.0, "{hits} of {queries}");
        assert_eq!(vllm("gpu_prefix_cache_queries_total"), queries);
        assert_eq!(vllm("gpu_prefix_cache_hits_total"), hits);
        let (block_size, num_blocks) =
            (info.block_size.to_string(), info.num_kv_blocks.to_string());
        let cache_labels = [
            ("model_name", MODEL),
            ("engine", "0"),
            ("block_size", block_size.as_str()),
            ("num_gpu_blocks", num_blocks.as_str()),
            ("cache_dtype", info.kv_cache_dtype.as_str()),
            ("enable_prefix_caching", "True"),
        ];
        assert_eq!(
            scrape.value("vllm:cache_config_info", &cache_labels),
            1.0,
            "{namespace:?}"
        );
        if namespace == MetricsNamespace::Pagoda {
            let own = |base: &str| scrape.value(&format!("pagoda:{base}"), &labels(&[]));
            assert_eq!(own("kv_cache_usage_perc"), vllm("kv_cache_usage_perc"));
            assert_eq!(
                own("prefix_cache_hits_total"),
                vllm("gpu_prefix_cache_hits_total")
            );
        }
    }
}

/// While requests wait and run, the router gauges say so (the endpoint picker's queue scorer).
#[test]
fn router_gauges_count_waiting_and_running_requests() {
    let engine = TinyEngine::start();
    let metrics = metrics(MetricsNamespace::Pagoda, &engine);
    let streams: Vec<_> = (0..3u32)
        .map(|i| {
            let request = EngineRequest::new(
                engine.next_request_id(),
                vec![1 + i, 2, 3],
                SamplingParams::greedy(),
                StopConditions::exact_length(1000),
            );
            engine
                .validate(request)
                .and_then(|r| engine.submit(r))
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let scrape = Scrape::parse(&metrics.render());
        let running = scrape.value("vllm:num_requests_running", &labels(&[]));
        let waiting = scrape.value("vllm:num_requests_waiting", &labels(&[]));
        assert_eq!(
            running,
            scrape.value("pagoda:num_requests_running", &labels(&[]))
        );
        if running + waiting == 3.0 && running >= 1.0 {
            assert!(scrape.value("vllm:kv_cache_usage_perc", &labels(&[])) > 0.0);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never saw the 3 requests: {running} running, {waiting} waiting"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(streams);
}
