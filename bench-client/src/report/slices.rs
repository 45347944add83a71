//! The time-slice table of the terminal report (`--slice-duration`): one row per slice, with the
//! latency metrics `--percentile-metrics` asks for as `median / pN` (N: the highest of
//! `--metric-percentiles`), over the requests sent in the slice.

use std::fmt::Write;

use super::rule::rule;
use crate::stats::{BenchSummary, Metric, MetricStats, WindowSummary};

/// Width of a `median / pN` latency column (two spaces before it).
const LATENCY_WIDTH: usize = 17;

/// The table, or nothing without slices.
pub(super) fn render_slices(out: &mut String, summary: &BenchSummary) {
    let Some(sliced) = &summary.slices else {
        return;
    };
    let top = summary
        .percentiles
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .unwrap_or(99.0);
    let title = format!("Time slices of {} s", sliced.slice_duration_s);
    let _ = writeln!(out, "{}", rule(&title, '-'));
    let mut header = format!(
        "{:>5} {:>17} {:>6} {:>6} {:>6} {:>7} {:>9}",
        "Slice", "Window (s)", "Sent", "OK", "Failed", "Req/s", "Out tok/s"
    );
    for metric in &summary.percentile_metrics {
        let short = metric.label().split(' ').next().unwrap_or("");
        let label = format!("{short} p50/p{top} ms");
        let _ = write!(header, "  {label:>LATENCY_WIDTH$}");
    }
    let _ = writeln!(out, "{header}");
    for (index, slice) in sliced.slices.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}",
            row(index, slice, &summary.percentile_metrics, top)
        );
    }
}

fn row(index: usize, slice: &WindowSummary, metrics: &[Metric], top: f64) -> String {
    let window = format!("{:.1} – {:.1}", slice.start_s, slice.end_s);
    let mut row = format!(
        "{index:>5} {window:>17} {:>6} {:>6} {:>6} {:>7.2} {:>9.2}",
        slice.num_sent,
        slice.num_completed,
        slice.num_failed,
        slice.request_throughput,
        slice.output_throughput
    );
    for &metric in metrics {
        let stats = slice
            .metrics
            .iter()
            .find(|m| m.metric == metric)
            .and_then(|m| m.stats.as_ref());
        let _ = write!(row, "  {:>LATENCY_WIDTH$}", median_and_top(stats, top));
    }
    row
}

/// `12.34 / 56.78`, or `-` without samples.
fn median_and_top(stats: Option<&MetricStats>, top: f64) -> String {
    let Some(stats) = stats else {
        return "-".to_string();
    };
    match stats.percentile_ms(top) {
        Some(value) => format!("{:.2} / {value:.2}", stats.median_ms),
        None => format!("{:.2} / -", stats.median_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::varied_run;
    use crate::stats::{summarize, SummaryOptions};

    #[test]
    fn one_row_per_slice_with_the_asked_metrics() {
        let records = varied_run(200);
        let options = SummaryOptions {
            slice_duration_s: Some(4.0),
            ..SummaryOptions::default()
        };
        let summary = summarize(&records, &options);
        let num_slices = summary.slices.as_ref().expect("slices").slices.len();
        let mut out = String::new();
        render_slices(&mut out, &summary);
        assert!(out.contains("Time slices of 4 s"), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        // Rule, header, one row per slice.
        assert_eq!(lines.len(), 2 + num_slices, "{out}");
        assert!(
            lines[1].contains("TTFT") && lines[1].contains("TPOT"),
            "{out}"
        );
        assert!(lines[2].trim_start().starts_with("0 "), "{out}");
        let mut without = String::new();
        render_slices(
            &mut without,
            &summarize(&records, &SummaryOptions::default()),
        );
        assert!(without.is_empty());
    }
}
