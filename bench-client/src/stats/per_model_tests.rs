//! The per-model breakdown on hand-built records: every number checked against arithmetic done
//! by hand.

use super::*;
use crate::record::ErrorKind;
use crate::stats::test_records::{failed, streamed};
use crate::stats::{summarize, SummaryOptions};

fn named(mut record: RequestRecord, model: Option<&str>) -> RequestRecord {
    record.model = model.map(String::from);
    record
}

/// Over a 4-second run:
/// - `a`: sent 0, chunks 0.5 / 1.0, ends 1.0, 2 tokens; sent 1.0, chunks 1.25 / 1.5 / 2.0,
///   ends 2.0, 3 tokens.
/// - `b`: sent 0, chunks 1.0 / 2.0, ends 4.0, 4 tokens; sent 0.5, failed (HTTP 404) at 1.0.
/// - a record without a model (saved before models were recorded), sent 0, ends 3.0.
fn two_adapters() -> Vec<RequestRecord> {
    vec![
        named(streamed(0, 0.0, 0.0, &[0.5, 1.0], 1.0, 2), Some("a")),
        named(streamed(1, 1.0, 1.0, &[1.25, 1.5, 2.0], 2.0, 3), Some("a")),
        named(streamed(2, 0.0, 0.0, &[1.0, 2.0], 4.0, 4), Some("b")),
        named(failed(3, 0.5, 1.0, ErrorKind::Http(404)), Some("b")),
        named(streamed(4, 0.0, 0.0, &[1.0], 3.0, 1), None),
    ]
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() < 1e-9
}

/// `(mean, median, p99)` of `metric` in ms.
fn brief(summary: &ModelSummary, metric: Metric) -> (f64, f64, f64) {
    let stats = summary.metric(metric).expect("has samples");
    let p99 = stats.percentile_ms(99.0).expect("p99 is always there");
    (stats.mean_ms, stats.median_ms, p99)
}

fn assert_brief(summary: &ModelSummary, metric: Metric, expected: (f64, f64, f64)) {
    let actual = brief(summary, metric);
    assert!(
        close(actual.0, expected.0) && close(actual.1, expected.1) && close(actual.2, expected.2),
        "{metric:?}: {actual:?}, expected {expected:?}"
    );
}

#[test]
fn counts_and_throughputs_per_model_over_the_runs_duration() {
    let breakdown = per_model(&two_adapters(), 4.0, &[99.0]);
    assert_eq!(breakdown.keys().collect::<Vec<_>>(), ["a", "b"]);
    let (a, b) = (&breakdown["a"], &breakdown["b"]);
    assert_eq!(
        (a.num_completed, a.num_failed, a.total_output_tokens),
        (2, 0, 5)
    );
    assert_eq!(
        (b.num_completed, b.num_failed, b.total_output_tokens),
        (1, 1, 4)
    );
    assert_eq!((a.request_throughput, a.output_throughput), (0.5, 1.25));
    assert_eq!((b.request_throughput, b.output_throughput), (0.25, 1.0));
}

#[test]
fn latencies_per_model() {
    let breakdown = per_model(&two_adapters(), 4.0, &[99.0]);
    let a = &breakdown["a"];
    // TTFT 500 and 250 ms; p99 interpolates: 250 + 0.99 · 250.
    assert_brief(a, Metric::Ttft, (375.0, 375.0, 497.5));
    // TPOT (1.0 − 0.5) / 1 and (2.0 − 1.25) / 2: 500 and 375 ms.
    assert_brief(a, Metric::Tpot, (437.5, 437.5, 498.75));
    // ITL gaps 500, 250, 500 ms; p99 between the two 500s.
    assert_brief(a, Metric::ItlPerChunk, (1250.0 / 3.0, 500.0, 500.0));
    assert_brief(a, Metric::E2el, (1000.0, 1000.0, 1000.0));
    // `b`'s failed request has no latencies: one sample each.
    let b = &breakdown["b"];
    assert_brief(b, Metric::Ttft, (1000.0, 1000.0, 1000.0));
    assert_brief(b, Metric::Tpot, (1000.0, 1000.0, 1000.0));
    assert_brief(b, Metric::E2el, (4000.0, 4000.0, 4000.0));
    let metrics: Vec<Metric> = a.metrics.iter().map(|m| m.metric).collect();
    assert_eq!(metrics, PER_MODEL_METRICS);
}

#[test]
fn the_runs_percentiles_come_with_p99() {
    let breakdown = per_model(&two_adapters(), 4.0, &[50.0, 90.0]);
    let stats = breakdown["a"].metric(Metric::E2el).expect("samples");
    let asked: Vec<f64> = stats.percentiles_ms.iter().map(|p| p.percentile).collect();
    assert_eq!(asked, [50.0, 90.0, 99.0]);
    let once = per_model(&two_adapters(), 4.0, &[99.0, 99.9]);
    let stats = once["a"].metric(Metric::E2el).expect("samples");
    assert_eq!(stats.percentiles_ms.len(), 2, "p99 is not repeated");
}

#[test]
fn summarize_breaks_the_run_down_and_the_models_add_up_to_it() {
    let records: Vec<RequestRecord> = two_adapters()
        .into_iter()
        .filter(|r| r.model.is_some())
        .collect();
    let summary = summarize(&records, &SummaryOptions::default());
    assert_eq!(summary.duration_s, 4.0);
    let models = &summary.per_model;
    assert_eq!(models.len(), 2);
    let sum = |f: fn(&ModelSummary) -> f64| models.values().map(f).sum::<f64>();
    assert_eq!(sum(|m| m.request_throughput), summary.request_throughput);
    assert_eq!(sum(|m| m.output_throughput), summary.output_throughput);
    let completed: usize = models.values().map(|m| m.num_completed).sum();
    let failed: usize = models.values().map(|m| m.num_failed).sum();
    assert_eq!(
        (completed, failed),
        (summary.num_completed, summary.num_failed)
    );
}

#[test]
fn records_without_a_model_give_no_breakdown() {
    let records = vec![named(streamed(0, 0.0, 0.0, &[0.5], 1.0, 1), None)];
    assert!(per_model(&records, 1.0, &[99.0]).is_empty());
}
