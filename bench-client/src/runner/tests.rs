//! The runner against the real `pagoda-server` (mock engine), over HTTP.
//!
//! Tests that start a server hold `SERIAL`, so timing tests never share the machine with another
//! server test of this crate.

use std::sync::Arc;
use std::time::Duration;

use super::test_server::{TestServer, SERIAL};
use super::*;
use crate::client::RequestConfig;
use crate::client::{discover_model, readiness_check, ClientError, Endpoint, ServerAccess};
use crate::record::{ErrorKind, TokenCountSource};

fn specs(n: usize, output_tokens: usize) -> Vec<RequestSpec> {
    (0..n)
        .map(|i| {
            RequestSpec::text(
                format!("request {i}: tell me about benchmarks"),
                8,
                output_tokens,
            )
        })
        .collect()
}

fn config(base_url: &str, endpoint: Endpoint) -> RunConfig {
    let mut request = RequestConfig::new(endpoint, base_url, "mock");
    request.timeout = Duration::from_secs(60);
    RunConfig::new(request)
}

/// Arrival times of a constant rate.
fn constant_rate(n: usize, rate: f64) -> Vec<f64> {
    (0..n).map(|i| i as f64 / rate).collect()
}

fn assert_all_succeeded(outcome: &RunOutcome) {
    let failed: Vec<_> = outcome.records.iter().filter(|r| !r.is_success()).collect();
    assert!(
        failed.is_empty(),
        "{} failed, first: {:?}",
        failed.len(),
        failed.first()
    );
}

fn ms(seconds: f64) -> String {
    format!("{:.3} ms", seconds * 1e3)
}

/// With TTFT 50 ms and TPOT 10 ms, the client sees what the mock does. The mock starts a
/// request's TTFT clock when the engine first schedules it, after the HTTP parse and the
/// tokenization, and each token is due `tpot` after the step that produced the previous one; so
/// TTFT ≥ 50 ms by construction (less would be a client clock error) and each gap ≥ 10 ms on the
/// server's side. The client's view adds the request's trip before scheduling and the engine
/// thread's wake-ups: a few ms on a debug server. Bounds: TTFT in [50, 65) ms, median gap in
/// [10, 12) ms, every gap under 25 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_and_token_gaps_match_the_mock_server() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&["--mock-ttft-ms", "50", "--mock-tpot-ms", "10"]);
    for endpoint in [Endpoint::Chat, Endpoint::Completions] {
        let specs = specs(10, 20);
        let outcome = run(
            &specs,
            &constant_rate(10, 8.0),
            &config(&server.base_url, endpoint),
        )
        .await
        .expect("runs");
        assert_all_succeeded(&outcome);
        let mut ttfts: Vec<f64> = outcome.records.iter().filter_map(|r| r.ttft_s()).collect();
        let mut gaps: Vec<f64> = outcome
            .records
            .iter()
            .flat_map(|r| r.chunk_times_s.windows(2).map(|w| w[1] - w[0]))
            .collect();
        ttfts.sort_by(f64::total_cmp);
        gaps.sort_by(f64::total_cmp);
        let median_gap = gaps[gaps.len() / 2];
        eprintln!(
            "{endpoint:?}: TTFT min {} median {} max {}; gaps min {} median {} max {}",
            ms(ttfts[0]),
            ms(ttfts[ttfts.len() / 2]),
            ms(ttfts[ttfts.len() - 1]),
            ms(gaps[0]),
            ms(median_gap),
            ms(gaps[gaps.len() - 1]),
        );
        for record in &outcome.records {
            assert_eq!(record.output_tokens, 20);
            assert_eq!(record.token_count_source, TokenCountSource::ServerUsage);
            assert_eq!(record.chunk_times_s.len(), 20, "one chunk per token");
            assert!(record.input_tokens > 0);
        }
        assert!(ttfts.len() == 10);
        assert!(ttfts[0] >= 0.050, "TTFT under the mock's 50 ms");
        // Upper bounds leave room for a debug server sharing a busy machine; a client that timed
        // from the wrong instant or merged chunks would be off by far more.
        assert!(ttfts[ttfts.len() - 1] < 0.150);
        assert!(
            (0.010..0.013).contains(&median_gap),
            "median gap {}",
            ms(median_gap)
        );
        assert!(gaps[gaps.len() - 1] < 0.100);
    }
}

/// The schedule is kept: 200 req/s for 2 s achieves the rate, and send lag does not grow over the
/// run (a client sleeping relative gaps drifts later and later). The sub-millisecond p99 goal is a
/// speed target, measured by `bench/client_capacity.sh` (docs/PERFORMANCE.md), not here: this
/// machine is shared, and a unit test must not fail because another job took the CPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_at_200_rps_keeps_the_schedule() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&["--mock-ttft-ms", "50", "--mock-tpot-ms", "10"]);
    let mut config = config(&server.base_url, Endpoint::Chat);
    config.num_warmups = 4;
    let outcome = run(&specs(400, 20), &constant_rate(400, 200.0), &config)
        .await
        .expect("runs");
    assert_all_succeeded(&outcome);
    let health = &outcome.client;
    let send_lags: Vec<f64> = outcome.records.iter().map(|r| r.send_lag_s()).collect();
    let send_lag = LagSummary::of(&send_lags);
    eprintln!("200 req/s × 2 s: {health:#?}\nrecords' send lag: {send_lag:?}");
    assert_eq!(outcome.records.len(), 400);
    assert_eq!(outcome.num_warmup_errors, 0);
    let target = health.target_send_rate.expect("a rate");
    let achieved = health.achieved_send_rate.expect("a rate");
    assert!((target - 200.0).abs() < 1e-6);
    // Bounds at ten times what the client does on an idle machine (0.99 of the rate, 5 ms of
    // lag), so that a loaded machine cannot fail them; a drifting client misses them by far.
    assert!(achieved >= 0.95 * target, "achieved {achieved:.2} req/s");
    let mut by_index = outcome.records.clone();
    by_index.sort_by_key(|r| r.index);
    let median_lag = |records: &[crate::record::RequestRecord]| {
        let mut lags: Vec<f64> = records.iter().map(|r| r.send_lag_s()).collect();
        lags.sort_by(f64::total_cmp);
        lags[lags.len() / 2]
    };
    let (early, late) = (median_lag(&by_index[..40]), median_lag(&by_index[360..]));
    assert!(
        late - early < 0.05,
        "send lag grew from {} to {}: drift",
        ms(early),
        ms(late)
    );
    assert!(send_lag.p50 < 0.05, "median send lag {}", ms(send_lag.p50));
    assert!(health.peak_in_flight >= 40, "~200 req/s × 0.24 s in flight");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrency_is_respected() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&["--mock-ttft-ms", "150", "--mock-tpot-ms", "5"]);
    let mut config = config(&server.base_url, Endpoint::Completions);
    config.max_concurrency = Some(4);
    // Closed loop: everything due at t = 0.
    let outcome = run(&specs(24, 5), &[0.0; 24], &config).await.expect("runs");
    assert_all_succeeded(&outcome);
    let health = &outcome.client;
    eprintln!("closed loop, 4 slots: {health:#?}");
    assert_eq!(health.peak_in_flight, 4);
    assert_eq!(health.target_send_rate, None);
    // Each wave of 4 takes ≥ 170 ms: the last wave waited ≥ 5 × 150 ms for its slots, and that
    // wait shows in the records' send lag, not in the client's own lag. (Were slot waits counted
    // as client lag, its p99 would be at least one wave, 170 ms; the bound stays well below that
    // and well above what a loaded machine's scheduling delays add.)
    assert!(health.slot_wait_s.max >= 0.75, "{:?}", health.slot_wait_s);
    let last = &outcome.records[23];
    assert!(last.send_lag_s() >= 0.75);
    assert!(health.client_lag_s.p99 < 0.08, "{:?}", health.client_lag_s);
    // No more than 4 requests overlap at any instant, by the records themselves.
    for record in &outcome.records {
        let t = record.actual_send_s;
        let overlapping = outcome
            .records
            .iter()
            .filter(|r| r.actual_send_s <= t && t < r.end_s)
            .count();
        assert!(overlapping <= 4);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_classified() {
    let _serial = SERIAL.lock().await;
    // Connection refused: a port that was just free.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let refused = config(&format!("http://127.0.0.1:{port}"), Endpoint::Chat);
    let outcome = run(&specs(1, 4), &[0.0], &refused).await.expect("runs");
    let record = &outcome.records[0];
    assert_eq!(record.error, Some(ErrorKind::Connection), "{record:?}");
    eprintln!("refused: {:?}", record.error_message);

    let server = TestServer::start_mock(&["--mock-ttft-ms", "50", "--mock-tpot-ms", "10"]);
    let mut wrong_model = config(&server.base_url, Endpoint::Chat);
    wrong_model.request.model = "no-such-model".into();
    let outcome = run(&specs(1, 4), &[0.0], &wrong_model).await.expect("runs");
    let record = &outcome.records[0];
    assert_eq!(record.error, Some(ErrorKind::Http(404)));
    assert!(record
        .error_message
        .as_deref()
        .is_some_and(|m| m.contains("does not exist")));

    // 20 tokens take ≥ 240 ms: a 150 ms timeout cuts the stream, keeping what arrived.
    let mut hasty = config(&server.base_url, Endpoint::Chat);
    hasty.request.timeout = Duration::from_millis(150);
    let outcome = run(&specs(1, 20), &[0.0], &hasty).await.expect("runs");
    let record = &outcome.records[0];
    assert_eq!(record.error, Some(ErrorKind::Timeout));
    assert!(!record.chunk_times_s.is_empty() && record.chunk_times_s.len() < 20);
    assert!(
        (record.e2el_s() - 0.150).abs() < 0.02,
        "{}",
        record.e2el_s()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_usage_falls_back_to_the_tokenizer() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&["--mock-tpot-ms", "1"]);
    let mut config = config(&server.base_url, Endpoint::Completions);
    config.request.sampling.extra_body.insert(
        "stream_options".into(),
        serde_json::json!({"include_usage": false}),
    );
    let counted = Arc::new(std::sync::Mutex::new(String::new()));
    let seen = Arc::clone(&counted);
    config.tokenizer = Some(Arc::new(move |text: &str| {
        *seen.lock().expect("lock") = text.to_string();
        1234
    }));
    let outcome = run(&specs(1, 6), &[0.0], &config).await.expect("runs");
    assert_all_succeeded(&outcome);
    let record = &outcome.records[0];
    assert_eq!(record.token_count_source, TokenCountSource::Tokenizer);
    assert_eq!(record.output_tokens, 1234);
    assert_eq!(
        record.input_tokens, 8,
        "the workload's own count without usage"
    );
    assert!(
        !counted.lock().expect("lock").is_empty(),
        "the generated text was counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_limit_stops_sending() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&["--mock-tpot-ms", "1"]);
    let mut config = config(&server.base_url, Endpoint::Chat);
    config.max_duration = Some(Duration::from_millis(450));
    let outcome = run(&specs(10, 4), &constant_rate(10, 10.0), &config)
        .await
        .expect("runs");
    assert_all_succeeded(&outcome);
    assert_eq!(outcome.records.len(), 5);
    assert_eq!(outcome.num_not_sent, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_find_the_model_and_wait_for_readiness() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&[]);
    let open = ServerAccess::default();
    readiness_check(&server.base_url, &open, Duration::from_secs(5))
        .await
        .expect("ready");
    let model = discover_model(&format!("{}/v1/", server.base_url), &open)
        .await
        .expect("a model");
    assert_eq!(model, "mock");
    let keyed = TestServer::start_mock(&["--api-key", "sesame"]);
    let key = |key: &str| ServerAccess {
        api_key: Some(key.to_string()),
        ..ServerAccess::default()
    };
    let wrong_key = readiness_check(&keyed.base_url, &key("nope"), Duration::from_secs(5)).await;
    assert!(matches!(
        wrong_key,
        Err(ClientError::Status { status: 401, .. })
    ));
    let model = discover_model(&keyed.base_url, &key("sesame")).await;
    assert_eq!(model.expect("a model"), "mock");
    // The key may come as a header of its own (a gateway's `--header`), probes included.
    let as_header = ServerAccess {
        headers: vec![("Authorization".into(), "Bearer sesame".into())],
        ..ServerAccess::default()
    };
    readiness_check(&keyed.base_url, &as_header, Duration::from_secs(5))
        .await
        .expect("ready with the header's key");
    assert_eq!(
        discover_model(&keyed.base_url, &as_header)
            .await
            .expect("a model"),
        "mock"
    );
    drop(keyed);
    drop(server);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let down = readiness_check(
        &format!("http://127.0.0.1:{port}"),
        &open,
        Duration::from_millis(300),
    )
    .await;
    assert!(
        matches!(down, Err(ClientError::NotReady { .. })),
        "{down:?}"
    );
}

/// 2,000 streams open at once (20 tokens, 100 ms apart: ~2 s each) all complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_concurrent_streams() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&[
        "--mock-ttft-ms",
        "50",
        "--mock-tpot-ms",
        "100",
        "--max-num-seqs",
        "2048",
        "--kv-cache-memory",
        "32GiB",
        "--max-waiting-requests",
        "4096",
    ]);
    let n = 2000;
    let config = config(&server.base_url, Endpoint::Chat);
    let started = std::time::Instant::now();
    let outcome = run(&specs(n, 20), &vec![0.0; n], &config)
        .await
        .expect("runs");
    eprintln!(
        "2000 streams in {:.2} s: {:#?}",
        started.elapsed().as_secs_f64(),
        outcome.client
    );
    assert_all_succeeded(&outcome);
    assert_eq!(outcome.records.len(), n);
    assert!(outcome.records.iter().all(|r| r.output_tokens == 20));
    assert_eq!(
        outcome.client.peak_in_flight, n,
        "all 2000 were open at once"
    );
}

/// The generated text is kept in the record only when the run asks (`--save-detailed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_text_is_kept_only_when_asked() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&[]);
    for keep in [true, false] {
        let mut config = config(&server.base_url, Endpoint::Completions);
        config.request.keep_generated_text = keep;
        let outcome = run(&specs(3, 5), &constant_rate(3, 100.0), &config)
            .await
            .expect("runs");
        assert_all_succeeded(&outcome);
        for record in &outcome.records {
            let text = record.generated_text.as_deref();
            assert_eq!(text.is_some_and(|t| !t.is_empty()), keep, "{text:?}");
        }
    }
}

/// Probes go out on their own schedule, outside `max_concurrency`, apart from the records: one
/// slot held by 3 requests of ≥ 50 + 29·20 ms each keeps the run ≥ 1.9 s, so at 10 probes/s at
/// least 19 probes are sent, and each (one token) takes at least the mock's 50 ms TTFT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_run_beside_the_workload_outside_its_concurrency_limit() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start_mock(&["--mock-ttft-ms", "50", "--mock-tpot-ms", "20"]);
    let mut config = config(&server.base_url, Endpoint::Completions);
    config.max_concurrency = Some(1);
    config.probe_rate_per_s = Some(10.0);
    let outcome = run(&specs(3, 30), &[0.0; 3], &config).await.expect("runs");
    assert_all_succeeded(&outcome);
    assert_eq!(outcome.records.len(), 3, "probes are not workload records");
    let probes = outcome.probes.expect("a probe summary");
    assert_eq!(probes.num_failed, 0, "{probes:?}");
    assert!(probes.num_completed >= 19, "{probes:?}");
    let median_ms = probes.median_e2el_ms.expect("a median");
    assert!(median_ms >= 50.0, "{probes:?}");
    assert!(probes.max_e2el_ms.expect("a max") >= median_ms);

    config.probe_rate_per_s = Some(f64::NAN);
    let refused = run(&specs(1, 1), &[0.0], &config).await;
    assert!(
        matches!(refused, Err(RunError::BadProbeRate(_))),
        "{refused:?}"
    );
}
