//! `summarize` on hand-built runs: every field checked against arithmetic done by hand.

use super::*;
use crate::stats::test_records::{failed, streamed, varied_run};
use crate::stats::{parse_goodput, SteadyStateWindow};

/// Two successes and a failure:
/// - A: sent 0, chunks 0.25 / 0.5 / 0.75 (one token each), ends 1.0; 3 tokens, 10 prompt.
/// - B: sent 0.5, chunks at 1.0 and 2.0 carrying 1 then 6 of its 7 tokens, ends 2.5; 30 prompt
///   tokens counted by the tokenizer.
/// - C: sent 0.25, failed (HTTP 503) at 0.5.
fn small_run() -> Vec<RequestRecord> {
    let mut b = streamed(1, 0.5, 0.5, &[1.0, 2.0], 2.5, 7);
    b.input_tokens = 30;
    b.token_count_source = TokenCountSource::Tokenizer;
    vec![
        streamed(0, 0.0, 0.0, &[0.25, 0.5, 0.75], 1.0, 3),
        b,
        failed(2, 0.25, 0.5, ErrorKind::Http(503)),
    ]
}

fn stats(summary: &BenchSummary, metric: Metric) -> &MetricStats {
    summary.metric(metric).expect("has samples")
}

#[test]
fn counts_tokens_and_throughputs() {
    let summary = summarize(&small_run(), &SummaryOptions::default());
    assert_eq!((summary.start_s, summary.duration_s), (0.0, 2.5));
    assert_eq!(
        (
            summary.num_requests,
            summary.num_completed,
            summary.num_failed
        ),
        (3, 2, 1)
    );
    assert_eq!(
        (summary.total_input_tokens, summary.total_output_tokens),
        (40, 10)
    );
    assert_eq!(summary.request_throughput, 0.8);
    assert_eq!(summary.input_throughput, 16.0);
    assert_eq!(summary.output_throughput, 4.0);
    assert_eq!(summary.total_token_throughput, 20.0);
    assert_eq!(
        summary.token_count_sources,
        TokenCountSources {
            num_server_usage: 1,
            num_tokenizer: 1
        }
    );
    // In flight: A [0,1), C [0.25,0.5), B [0.5,2.5); C ends as B starts: two at most.
    assert_eq!(summary.max_concurrent_requests, 2);
    // Buckets: [0,1) A's 3 tokens, [1,2) B's first, [2,3) B's other 6.
    assert_eq!(summary.max_output_tokens_per_s, 6.0);
    let errors = &summary.errors_by_kind;
    assert_eq!(errors.len(), 1);
    assert_eq!((errors[0].label.as_str(), errors[0].count), ("http_503", 1));
}

#[test]
fn latency_metrics_by_hand() {
    let summary = summarize(&small_run(), &SummaryOptions::default());
    // TTFT: A 250 ms, B 500 ms.
    let ttft = stats(&summary, Metric::Ttft);
    assert_eq!(
        (ttft.num_samples, ttft.mean_ms, ttft.min_ms, ttft.max_ms),
        (2, 375.0, 250.0, 500.0)
    );
    assert_eq!(ttft.std_ms, 125.0);
    // TPOT: A (1.0 − 0.25) / 2 = 375 ms, B (2.0 − 0.5) / 6 = 250 ms.
    let tpot = stats(&summary, Metric::Tpot);
    assert_eq!((tpot.min_ms, tpot.max_ms), (250.0, 375.0));
    // ITL per chunk: A 250, 250; B 1000.
    let itl = stats(&summary, Metric::ItlPerChunk);
    assert_eq!(
        (itl.num_samples, itl.median_ms, itl.max_ms),
        (3, 250.0, 1000.0)
    );
    // ITL per token: A 250, 250; B's gap of 1 s over its 6 later tokens: 6 × 166.67 ms.
    let per_token = stats(&summary, Metric::ItlPerToken);
    assert_eq!(per_token.num_samples, 8);
    assert!((per_token.min_ms - 1000.0 / 6.0).abs() < 1e-9);
    assert_eq!(per_token.max_ms, 250.0);
    // E2EL: 1000 and 2000 ms. Time to second token: A 500, B 1500 ms.
    assert_eq!(stats(&summary, Metric::E2el).mean_ms, 1500.0);
    assert_eq!(stats(&summary, Metric::TimeToSecondToken).max_ms, 1500.0);
    let p99 = stats(&summary, Metric::E2el).percentile_ms(99.0);
    assert_eq!(p99, Some(1990.0));
}

#[test]
fn errors_are_grouped_by_kind() {
    let records = vec![
        failed(0, 0.0, 0.1, ErrorKind::Http(503)),
        failed(1, 0.0, 0.1, ErrorKind::Timeout),
        failed(2, 0.0, 0.1, ErrorKind::Http(503)),
        failed(3, 0.0, 0.1, ErrorKind::Http(429)),
        failed(4, 0.0, 0.1, ErrorKind::Connection),
        streamed(5, 0.0, 0.0, &[0.05], 0.1, 1),
    ];
    let summary = summarize(&records, &SummaryOptions::default());
    let grouped: Vec<(&str, usize)> = summary
        .errors_by_kind
        .iter()
        .map(|e| (e.label.as_str(), e.count))
        .collect();
    assert_eq!(
        grouped,
        vec![
            ("connection", 1),
            ("http_429", 1),
            ("http_503", 2),
            ("timeout", 1)
        ]
    );
    assert_eq!(summary.errors_by_kind[2].kind, ErrorKind::Http(503));
    assert_eq!((summary.num_completed, summary.num_failed), (1, 5));
    // Only the success has latencies.
    assert_eq!(stats(&summary, Metric::E2el).num_samples, 1);
}

#[test]
fn goodput_over_the_whole_run() {
    let options = SummaryOptions {
        goodput: parse_goodput(&["ttft:300".into(), "e2el:1500".into()]).expect("valid"),
        ..SummaryOptions::default()
    };
    let summary = summarize(&small_run(), &options);
    let goodput = summary.goodput.expect("asked for");
    // Only A (TTFT 250 ms, E2EL 1 s) meets both.
    assert_eq!((goodput.num_good, goodput.request_goodput), (1, 0.4));
    assert!(summarize(&small_run(), &SummaryOptions::default())
        .goodput
        .is_none());
}

#[test]
fn the_order_of_records_does_not_matter() {
    let records = varied_run(200);
    let options = SummaryOptions {
        percentiles: vec![50.0, 90.0, 99.0, 99.9],
        goodput: parse_goodput(&["ttft:150".into()]).expect("valid"),
        ..SummaryOptions::default()
    };
    let forward = summarize(&records, &options);
    let mut shuffled = records;
    shuffled.reverse();
    shuffled.swap(3, 150);
    assert_eq!(summarize(&shuffled, &options), forward);
    assert!(
        forward.steady_state.is_some(),
        "a varied run has a steady state"
    );
}

#[test]
fn steady_state_options() {
    let records = varied_run(200);
    let off = SummaryOptions {
        steady_state: SteadyStateWindow::Off,
        ..SummaryOptions::default()
    };
    assert!(summarize(&records, &off).steady_state.is_none());
    let fixed = SummaryOptions {
        steady_state: SteadyStateWindow::Fixed {
            start_s: 5.0,
            end_s: 10.0,
        },
        ..SummaryOptions::default()
    };
    let window = summarize(&records, &fixed)
        .steady_state
        .expect("fixed window");
    assert_eq!(
        (window.start_s, window.end_s, window.duration_s),
        (5.0, 10.0, 5.0)
    );
}

#[test]
fn an_empty_run_summarizes_to_zeros() {
    let summary = summarize(&[], &SummaryOptions::default());
    assert_eq!((summary.duration_s, summary.num_requests), (0.0, 0));
    assert_eq!(summary.request_throughput, 0.0);
    assert!(summary.metrics.iter().all(|m| m.stats.is_none()));
    assert!(summary.steady_state.is_none() && !summary.integrity.fell_behind);
}
