use super::*;
use crate::client::{Endpoint, RequestConfig};
use crate::runner::{run, RunConfig};
use crate::workload::RequestSpec;

/// A real scrape of `pagoda-server --mock --mock-ttft-ms 50 --mock-tpot-ms 10` after 1,236
/// requests of 20 tokens.
const PAGODA_MOCK: &str = include_str!("testdata/pagoda_mock.prom");

fn scrape(unix_s: f64, text: &str) -> Scrape {
    Scrape {
        unix_s,
        exposition: Exposition::parse(text),
    }
}

fn gauges(namespace: &str, scrape: &Scrape) -> GaugeSample {
    Names::new(namespace).gauges(scrape)
}

#[test]
fn a_real_pagoda_scrape() {
    let exposition = Exposition::parse(PAGODA_MOCK);
    assert_eq!(exposition.num_skipped_lines, 0);
    assert_eq!(detect_namespace(&exposition).as_deref(), Some("pagoda"));
    let ttft = exposition
        .histogram("pagoda:time_to_first_token_seconds")
        .expect("TTFT");
    assert_eq!(ttft.count, 1236.0);
    assert_eq!(ttft.buckets.len(), 23, "vLLM's 22 TTFT bounds and +Inf");
    // Every TTFT was a little over 50 ms: in the (0.04, 0.06] bucket.
    let p50 = ttft.quantile(0.5).expect("p50");
    assert!((0.04..=0.06).contains(&p50), "{p50}");
    assert!((ttft.mean().expect("mean") - 0.0505).abs() < 0.002);
    let itl = exposition
        .histogram("pagoda:inter_token_latency_seconds")
        .expect("ITL");
    let p50 = itl.quantile(0.5).expect("p50");
    assert!((0.01..=0.025).contains(&p50), "{p50}");
    assert_eq!(exposition.sum("pagoda:request_success_total"), Some(1236.0));
    assert_eq!(exposition.sum("http_requests_total"), Some(1236.0));
}

#[test]
fn a_vllm_scrape_is_read_the_same_way() {
    let vllm = PAGODA_MOCK.replace("pagoda:", "vllm:");
    let exposition = Exposition::parse(&vllm);
    assert_eq!(detect_namespace(&exposition).as_deref(), Some("vllm"));
    let before = scrape(100.0, "");
    let after = scrape(110.0, &vllm);
    let timeline = vec![gauges("vllm", &before), gauges("vllm", &after)];
    let stats = server_side_stats("vllm", &before, &after, timeline);
    assert_eq!(stats.num_finished, Some(1236.0));
    assert_eq!(stats.ttft_s.map(|s| s.count), Some(1236.0));
    assert_eq!(stats.window_s, 10.0);
    let hit_rate = stats.prefix_cache_hit_rate.expect("a hit rate");
    assert!((hit_rate - 16240.0 / 68824.0).abs() < 1e-12);
    // Another engine's prefix is found too.
    let sglang = Exposition::parse(&PAGODA_MOCK.replace("pagoda:", "sglang:"));
    assert_eq!(detect_namespace(&sglang).as_deref(), Some("sglang"));
    assert_eq!(detect_namespace(&Exposition::parse("up 1\n")), None);
    // An exporter that writes no `# TYPE` lines.
    let untyped: String = PAGODA_MOCK
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    let untyped = Exposition::parse(&untyped);
    assert_eq!(detect_namespace(&untyped).as_deref(), Some("pagoda"));
    let ttft = untyped.histogram("pagoda:time_to_first_token_seconds");
    assert_eq!(ttft.map(|h| h.count), Some(1236.0));
}

/// Two scrapes in vLLM's older names: the window's numbers are the differences.
#[test]
fn window_statistics_from_two_scrapes() {
    let before = scrape(
        1000.0,
        r#"# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 10
vllm:time_to_first_token_seconds_bucket{le="0.5"} 10
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 10
vllm:time_to_first_token_seconds_sum 0.5
vllm:time_to_first_token_seconds_count 10
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.01"} 0
vllm:time_per_output_token_seconds_bucket{le="0.05"} 100
vllm:time_per_output_token_seconds_bucket{le="+Inf"} 100
vllm:time_per_output_token_seconds_sum 2
vllm:time_per_output_token_seconds_count 100
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{le="0.3"} 10
vllm:request_queue_time_seconds_bucket{le="+Inf"} 10
vllm:request_queue_time_seconds_sum 0.1
vllm:request_queue_time_seconds_count 10
vllm:num_requests_waiting 0
vllm:num_requests_running 0
vllm:gpu_cache_usage_perc 0.0
vllm:num_preemptions_total 2
vllm:gpu_prefix_cache_queries_total 1000
vllm:gpu_prefix_cache_hits_total 100
"#,
    );
    let during = scrape(
        1005.0,
        "vllm:num_requests_waiting 12\nvllm:num_requests_running 30\nvllm:gpu_cache_usage_perc 0.8\n",
    );
    let after = scrape(
        1010.0,
        r#"# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 10
vllm:time_to_first_token_seconds_bucket{le="0.5"} 30
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 30
vllm:time_to_first_token_seconds_sum 6.5
vllm:time_to_first_token_seconds_count 30
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.01"} 0
vllm:time_per_output_token_seconds_bucket{le="0.05"} 500
vllm:time_per_output_token_seconds_bucket{le="+Inf"} 500
vllm:time_per_output_token_seconds_sum 10
vllm:time_per_output_token_seconds_count 500
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{le="0.3"} 20
vllm:request_queue_time_seconds_bucket{le="+Inf"} 30
vllm:request_queue_time_seconds_sum 5.1
vllm:request_queue_time_seconds_count 30
vllm:num_requests_waiting 1
vllm:num_requests_running 4
vllm:gpu_cache_usage_perc 0.1
vllm:num_preemptions_total 5
vllm:gpu_prefix_cache_queries_total 3000
vllm:gpu_prefix_cache_hits_total 1100
"#,
    );
    let timeline = [&before, &during, &after]
        .iter()
        .map(|s| gauges("vllm", s))
        .collect();
    let stats = server_side_stats("vllm", &before, &after, timeline);
    // The 20 TTFTs of the window all lie in (0.1, 0.5]: their median interpolates to 0.3.
    let ttft = stats.ttft_s.expect("TTFT");
    assert_eq!(ttft.count, 20.0);
    assert!((ttft.p50 - 0.3).abs() < 1e-12);
    assert!((ttft.mean - 0.3).abs() < 1e-12);
    // rank 19.8 of 20: 0.1 + 0.4 × 0.99.
    assert!((ttft.p99 - 0.496).abs() < 1e-12);
    let itl = stats.itl_s.expect("ITL from the older name");
    assert_eq!(itl.count, 400.0);
    assert!((itl.mean - 0.02).abs() < 1e-12);
    assert!((stats.mean_queue_time_s.expect("queue") - 0.25).abs() < 1e-12);
    // 10 of the 20 queued over 0.3 s: the p90 is the highest finite bound.
    assert_eq!(stats.queue_time_s.map(|q| q.p90), Some(0.3));
    assert_eq!(stats.peak_num_requests_waiting, Some(12.0));
    assert_eq!(stats.peak_num_requests_running, Some(30.0));
    assert_eq!(stats.peak_kv_cache_usage, Some(0.8));
    assert_eq!(stats.num_preemptions, Some(3.0));
    assert_eq!(stats.prefix_cache_queries, Some(2000.0));
    assert_eq!(stats.prefix_cache_hit_rate, Some(0.5));
    assert_eq!(stats.num_finished, None, "not exported here");
    assert_eq!(stats.timeline.len(), 3);
    // The counter's value at each scrape; the middle scrape does not export it.
    let sampled: Vec<Option<f64>> = stats.timeline.iter().map(|g| g.num_preemptions).collect();
    assert_eq!(sampled, vec![Some(2.0), None, Some(5.0)]);
}

#[test]
fn metrics_urls() {
    assert_eq!(metrics_url("http://h:8000"), "http://h:8000/metrics");
    assert_eq!(metrics_url("http://h:8000/"), "http://h:8000/metrics");
    assert_eq!(metrics_url("http://h:9090/custom"), "http://h:9090/custom");
}

/// A run against the mock server, scraped every 200 ms: the server's view matches the client's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_a_live_server_during_a_run() {
    let _serial = crate::runner::test_server::SERIAL.lock().await;
    for namespace in ["pagoda", "vllm"] {
        let server = crate::runner::test_server::TestServer::start_mock(&[
            "--mock-ttft-ms",
            "50",
            "--mock-tpot-ms",
            "10",
            "--metrics-namespace",
            namespace,
        ]);
        let scraper = Scraper::start(&server.base_url, Duration::from_millis(200), false)
            .await
            .expect("first scrape");
        let specs: Vec<RequestSpec> = (0..30)
            .map(|i| RequestSpec::text(format!("scrape test {i}"), 4, 10))
            .collect();
        let arrivals: Vec<f64> = (0..30).map(|i| i as f64 / 30.0).collect();
        let config = RunConfig::new(RequestConfig::new(Endpoint::Chat, &server.base_url, "mock"));
        let outcome = run(&specs, &arrivals, &config).await.expect("runs");
        let stats = scraper.finish().await.expect("stats");
        eprintln!("{namespace}: {stats:#?}");
        assert!(outcome.records.iter().all(|r| r.is_success()));
        assert_eq!(stats.namespace, namespace);
        assert_eq!(stats.num_finished, Some(30.0));
        assert_eq!(stats.num_generation_tokens, Some(300.0));
        assert!(stats.num_scrapes >= 5, "before, after and every 200 ms");
        assert_eq!(stats.num_failed_scrapes, 0);
        let ttft = stats.ttft_s.expect("TTFT");
        assert_eq!(ttft.count, 30.0);
        assert!((0.04..=0.06).contains(&ttft.p50), "{ttft:?}");
        let itl = stats.itl_s.expect("ITL");
        assert_eq!(itl.count, 270.0);
        assert!(stats.peak_num_requests_running.is_some_and(|r| r >= 1.0));
        assert_eq!(stats.num_preemptions, Some(0.0));
    }
}
