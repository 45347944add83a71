//! Send-integrity verdicts on built schedules: on time, late, stalled, bursts, concurrency-capped.

use super::*;
use crate::stats::test_records::streamed;

/// `num` requests due every `interval_s`, each sent `lag_s(i)` late and lasting 0.5 s.
fn schedule(num: usize, interval_s: f64, lag_s: impl Fn(usize) -> f64) -> Vec<RequestRecord> {
    (0..num)
        .map(|i| {
            let target_s = i as f64 * interval_s;
            let send_s = target_s + lag_s(i);
            streamed(i, target_s, send_s, &[send_s + 0.1], send_s + 0.5, 1)
        })
        .collect()
}

fn rate_options(rate: f64) -> SummaryOptions {
    SummaryOptions {
        target_request_rate: Some(rate),
        ..SummaryOptions::default()
    }
}

#[test]
fn an_on_time_client_passes() {
    let records = schedule(100, 0.1, |_| 0.0005);
    let integrity = check_send_integrity(&records, &rate_options(10.0));
    assert!(!integrity.fell_behind, "{:?}", integrity.reasons);
    assert_eq!(integrity.configured_rate, Some(10.0));
    let (scheduled, achieved) = (integrity.scheduled_rate, integrity.achieved_rate);
    assert!((scheduled.expect("rate") - 10.0).abs() < 1e-9);
    assert!((achieved.expect("rate") - 10.0).abs() < 1e-9);
    let lag = integrity.send_lag.expect("lags");
    assert!((lag.p50_ms - 0.5).abs() < 1e-9 && (lag.max_ms - 0.5).abs() < 1e-9);
    assert!(integrity.notes.is_empty());
}

#[test]
fn a_late_client_is_flagged_on_rate_and_lag() {
    // Sends at 95% of the rate: request i goes out at i × 0.1 / 0.95.
    let records = schedule(100, 0.1, |i| i as f64 * 0.1 * (1.0 / 0.95 - 1.0));
    let integrity = check_send_integrity(&records, &rate_options(10.0));
    assert!(integrity.fell_behind);
    let achieved = integrity.achieved_rate.expect("rate");
    assert!((achieved - 9.5).abs() < 1e-9, "{achieved}");
    assert_eq!(integrity.reasons.len(), 3, "{:?}", integrity.reasons);
    assert!(integrity.reasons[0].starts_with("achieved request rate 9.500 req/s"));
    assert!(integrity.reasons[1].starts_with("p99 client send lag"));
    assert!(integrity.reasons[2].starts_with("max client send lag"));
}

#[test]
fn a_few_stalls_fail_the_p99_lag_alone() {
    let records = schedule(100, 0.1, |i| if i == 40 || i == 41 { 0.05 } else { 0.0 });
    let integrity = check_send_integrity(&records, &rate_options(10.0));
    assert!(integrity.fell_behind);
    assert_eq!(integrity.reasons.len(), 1, "{:?}", integrity.reasons);
    assert!(integrity.reasons[0].contains("p99 client send lag 50.000 ms exceeds 10 ms"));
}

#[test]
fn thresholds_are_options() {
    let records = schedule(100, 0.1, |i| if i == 40 || i == 41 { 0.05 } else { 0.0 });
    let mut options = rate_options(10.0);
    options.integrity.max_p99_send_lag_ms = 60.0;
    let integrity = check_send_integrity(&records, &options);
    assert!(!integrity.fell_behind, "{:?}", integrity.reasons);
    assert_eq!(integrity.thresholds.max_p99_send_lag_ms, 60.0);
}

#[test]
fn a_burst_is_not_judged_on_lag() {
    // Everything due at 0 (rate inf); sending took 50 ms.
    let records = schedule(100, 0.0, |i| i as f64 * 0.0005);
    let integrity = check_send_integrity(&records, &SummaryOptions::default());
    assert!(!integrity.fell_behind);
    assert_eq!(integrity.scheduled_rate, None);
    assert_eq!(integrity.notes.len(), 1);
    assert!((integrity.send_lag.expect("lags").max_ms - 49.5).abs() < 1e-9);
}

/// One slot, everything due at 0: request i waits for request i − 1 to end, then the client
/// takes `reaction_s` to send it.
fn closed_loop(num: usize, reaction_s: f64) -> Vec<RequestRecord> {
    let mut records = Vec::with_capacity(num);
    let mut free_at_s = 0.0;
    for i in 0..num {
        let send_s = free_at_s + reaction_s;
        records.push(streamed(i, 0.0, send_s, &[send_s + 0.1], send_s + 0.25, 1));
        free_at_s = send_s + 0.25;
    }
    records
}

#[test]
fn waiting_for_a_slot_is_not_the_clients_fault() {
    let options = SummaryOptions {
        max_concurrency: Some(1),
        ..SummaryOptions::default()
    };
    let integrity = check_send_integrity(&closed_loop(50, 0.0002), &options);
    assert!(!integrity.fell_behind, "{:?}", integrity.reasons);
    assert!(integrity.send_lag.expect("lags").max_ms > 12_000.0);
    let client_lag = integrity.client_lag.expect("lags");
    assert!((client_lag.max_ms - 0.2).abs() < 1e-6, "{client_lag:?}");
    assert_eq!(integrity.notes.len(), 1, "the rate is not checked");

    let slow = check_send_integrity(&closed_loop(50, 0.03), &options);
    assert!(slow.fell_behind);
    assert!(slow.reasons[0].starts_with("p99 client send lag 30.000 ms"));
}

#[test]
fn runner_evidence_flags_the_run() {
    let records = schedule(10, 0.1, |_| 0.0);
    let mut integrity = check_send_integrity(&records, &rate_options(10.0));
    assert!(!integrity.fell_behind);
    integrity.add_evidence("client CPU at 100% for 12 s");
    assert!(integrity.fell_behind);
    assert_eq!(
        integrity.reasons,
        vec!["client CPU at 100% for 12 s".to_string()]
    );
}
