//! The router contract on a running server (docs/metrics.md § Router contract): under load, a
//! scrape holds what llm-d's endpoint picker, AIBrix and production-stack read — waiting and
//! running requests, KV usage as a 0–1 fraction of the pool, and `cache_config_info` with the
//! engine's block size and block count — on the mock engine and on the default model.

mod common;

use std::time::Duration;

use common::api::{client, post_json, scrape, wait_for_metrics};
use common::prom::Scrape;
use common::server::ServerProcess;
use reqwest::StatusCode;
use serde_json::json;

/// Four requests, two running at a time (`--max-num-seqs 2`), long enough to be scraped.
async fn check_under_load(server: &ServerProcess, max_tokens: u64) {
    let client = client();
    let requests: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            let url = server.url("/v1/completions");
            tokio::spawn(async move {
                let body = json!({"prompt": format!("request {i}: tell me a story"),
                    "max_tokens": max_tokens, "ignore_eos": true});
                post_json(&client, &url, &body).await
            })
        })
        .collect();
    let loaded = wait_for_metrics(&client, server, Duration::from_secs(120), |s| {
        gauge(s, "vllm:num_requests_running") == 2.0 && gauge(s, "vllm:num_requests_waiting") == 2.0
    })
    .await;
    let num_blocks = gauge(&loaded, "pagoda:num_kv_blocks");
    let used = gauge(&loaded, "pagoda:num_kv_blocks_used");
    let usage = gauge(&loaded, "vllm:kv_cache_usage_perc");
    assert!(used > 0.0 && usage > 0.0 && usage <= 1.0, "usage {usage}");
    assert_eq!(usage, used / num_blocks, "a fraction of the pool's blocks");
    assert_eq!(gauge(&loaded, "vllm:gpu_cache_usage_perc"), usage);
    let info = loaded
        .series("vllm:cache_config_info", &[])
        .next()
        .expect("vllm:cache_config_info");
    assert_eq!(info.value, 1.0);
    let label = |name: &str| info.labels.get(name).cloned().unwrap_or_default();
    assert_eq!(label("block_size"), "16");
    assert_eq!(label("num_gpu_blocks"), num_blocks.to_string());
    assert_eq!(label("enable_prefix_caching"), "True");
    for request in requests {
        let reply = request.await.expect("the request task");
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    }
    let idle = scrape(&client, server).await;
    for name in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ] {
        assert_eq!(gauge(&idle, name), 0.0, "{name} once idle");
    }
}

fn gauge(scrape: &Scrape, name: &str) -> f64 {
    scrape.sum(name, &[])
}

#[tokio::test]
async fn the_mock_engine_shows_its_load_to_routers() {
    let server = ServerProcess::start(&["--mock", "--mock-tpot-ms", "20", "--max-num-seqs", "2"]);
    check_under_load(&server, 100).await;
}

#[tokio::test]
async fn the_default_model_shows_its_load_to_routers() {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 model path");
    let server = ServerProcess::start(&["--model", model, "--max-num-seqs", "2"]);
    check_under_load(&server, 300).await;
}
