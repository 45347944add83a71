//! Latency distributions as CDFs: one chart per metric, one line per result with records.

use super::figure::{charts_row, line_figure, note, section};
use super::input::ReportResult;
use crate::analysis::plot::{Chart, Series};
use crate::stats::Metric;

/// A CDF of more samples than this is drawn through this many evenly spaced ranks (plus the
/// extremes), which no eye can tell from the full staircase.
pub const MAX_CDF_POINTS: usize = 400;

/// The metrics drawn, with the chart id suffix.
const CDF_METRICS: [(Metric, &str); 4] = [
    (Metric::Ttft, "ttft"),
    (Metric::Tpot, "tpot"),
    (Metric::ItlPerChunk, "itl"),
    (Metric::E2el, "e2el"),
];

/// `(value, fraction of samples ≤ value)` of `samples_ms` (any order).
pub fn cdf_points(samples_ms: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = samples_ms
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    sorted.sort_by(f64::total_cmp);
    let num_samples = sorted.len();
    if num_samples == 0 {
        return Vec::new();
    }
    let ranks: Vec<usize> = if num_samples <= MAX_CDF_POINTS {
        (0..num_samples).collect()
    } else {
        (0..MAX_CDF_POINTS)
            .map(|i| i * (num_samples - 1) / (MAX_CDF_POINTS - 1))
            .collect()
    };
    ranks
        .into_iter()
        .map(|rank| (sorted[rank], (rank + 1) as f64 / num_samples as f64))
        .collect()
}

/// The CDF charts, or a note that they need the records.
pub fn distributions_section(results: &[&ReportResult]) -> String {
    let with_records: Vec<&ReportResult> = results
        .iter()
        .copied()
        .filter(|r| r.records.is_some())
        .collect();
    if with_records.is_empty() {
        return section(
            "distributions",
            "Latency distributions",
            &note(
                "The distributions need the per-request records: run serve with --save-detailed \
                 (or --html, which uses the records in memory).",
            ),
        );
    }
    let figures: Vec<String> = CDF_METRICS
        .iter()
        .map(|&(metric, id)| {
            let series = with_records
                .iter()
                .map(|r| {
                    let records = r.records.as_deref().unwrap_or_default();
                    let samples_ms: Vec<f64> =
                        metric.samples_s(records).iter().map(|s| s * 1e3).collect();
                    Series {
                        label: r.label.clone(),
                        points: cdf_points(&samples_ms),
                    }
                })
                .collect();
            let chart = Chart {
                title: format!("{} distribution", metric.label()),
                x_label: format!("{} (ms)", metric.label()),
                y_label: "Fraction of samples ≤ x".into(),
                series,
            };
            line_figure(&format!("chart-cdf-{id}"), &chart, "")
        })
        .collect();
    section(
        "distributions",
        "Latency distributions (CDF)",
        &format!(
            "{}{}",
            note("Successful requests only. Read a percentile off the y axis: at 0.99 is the p99."),
            charts_row(&figures)
        ),
    )
}
