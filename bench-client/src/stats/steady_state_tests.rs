//! The steady-state window on built timelines, and the statistics inside a window.

use super::*;
use crate::stats::test_records::streamed;
use crate::stats::{parse_goodput, Metric};

/// `num` requests sent every `interval_s` (on time), each lasting 2 s with one-token chunks at
/// +0.5, +1.0 and +1.5 s.
fn constant_rate(num: usize, interval_s: f64) -> Vec<RequestRecord> {
    (0..num)
        .map(|i| {
            let s = i as f64 * interval_s;
            streamed(i, s, s, &[s + 0.5, s + 1.0, s + 1.5], s + 2.0, 3)
        })
        .collect()
}

#[test]
fn a_constant_rate_run_excludes_ramp_up_and_drain() {
    // 8 req/s, 2 s each: 16 in flight once request 15 is sent at 1.875 s; last send 9.875 s.
    let records = constant_rate(80, 0.125);
    assert_eq!(steady_state_window(&records), Some((1.875, 9.875)));
}

#[test]
fn a_closed_loop_is_steady_from_the_start() {
    // 4 slots, 1-second requests sent as soon as a slot frees: 4 in flight from t = 0.
    let records: Vec<RequestRecord> = (0..40)
        .map(|i| {
            let s = (i / 4) as f64;
            streamed(i, 0.0, s, &[s + 0.5], s + 1.0, 1)
        })
        .collect();
    assert_eq!(steady_state_window(&records), Some((0.0, 9.0)));
}

#[test]
fn a_burst_or_a_sliver_has_no_steady_state() {
    let burst: Vec<RequestRecord> = (0..100)
        .map(|i| {
            let s = i as f64 * 0.0005;
            streamed(i, 0.0, s, &[s + 1.0], s + 5.0, 1)
        })
        .collect();
    assert_eq!(steady_state_window(&burst), None);
    assert_eq!(steady_state_window(&[]), None);
    let single = constant_rate(1, 1.0);
    assert_eq!(steady_state_window(&single), None);
}

#[test]
fn the_plateau_is_the_time_weighted_median() {
    assert_eq!(
        time_weighted_median(&[(1, 1.0), (5, 3.0), (3, 1.0)]),
        Some(5)
    );
    assert_eq!(
        time_weighted_median(&[(1, 2.0), (5, 1.0), (3, 1.0)]),
        Some(1)
    );
    assert_eq!(time_weighted_median(&[]), None);
}

#[test]
fn window_statistics_count_what_happened_inside() {
    let records = constant_rate(80, 0.125);
    let options = SummaryOptions {
        goodput: parse_goodput(&["e2el:2000".to_string()]).expect("valid"),
        ..SummaryOptions::default()
    };
    let window = summarize_window(&records, (1.875, 9.875), &options);
    assert_eq!(window.duration_s, 8.0);
    // Ends k/8 + 2 in the window: k = 0..=62. Sends in the window: k = 15..=78.
    assert_eq!((window.num_completed, window.num_failed), (63, 0));
    assert_eq!(window.num_sent, 64);
    assert_eq!(window.total_input_tokens, 630);
    // 64 requests contribute each chunk offset: 192 tokens.
    assert_eq!(window.total_output_tokens, 192);
    assert_eq!(window.request_throughput, 63.0 / 8.0);
    assert_eq!(window.output_throughput, 24.0);
    assert_eq!(window.total_token_throughput, (630.0 + 192.0) / 8.0);
    assert_eq!(window.request_goodput, Some(63.0 / 8.0));
    assert_eq!(window.mean_concurrency, 16.0);
    let e2el = window
        .metrics
        .iter()
        .find(|m| m.metric == Metric::E2el)
        .and_then(|m| m.stats.as_ref())
        .expect("e2el");
    assert_eq!((e2el.num_samples, e2el.mean_ms), (64, 2000.0));
}
