//! The client's view over time: output tokens per second (in bins) and requests in flight (a
//! step line), one line per result with records, `t = 0` when the first request was due.

use super::figure::{charts_row, line_figure, note, section, step_points};
use super::input::ReportResult;
use crate::analysis::plot::{Chart, Series};
use crate::record::RequestRecord;
use crate::stats::{concurrency_steps, token_arrivals};

/// A run is cut into about this many bins for the throughput line.
const TARGET_NUM_BINS: f64 = 100.0;
/// The narrowest bin: finer than this, a bin holds too few chunks to be a rate.
const MIN_BIN_S: f64 = 0.1;
/// Up to this many changes the requests in flight are drawn exactly; beyond, as the peak of
/// each throughput bin.
pub const MAX_CONCURRENCY_STEPS: usize = 2000;

/// A line over time computed from a run's records, in bins of the given width.
type PointsOverTime = fn(&[RequestRecord], f64) -> Vec<(f64, f64)>;

/// The bin width for a run of `duration_s`: about a hundredth of it, rounded up to 1, 2 or
/// 5 × 10^k seconds, at least 0.1 s.
pub fn bin_width_s(duration_s: f64) -> f64 {
    let raw = (duration_s / TARGET_NUM_BINS).max(MIN_BIN_S);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|width| *width >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

/// The end of the run: the last response's end.
pub fn run_end_s(records: &[RequestRecord]) -> f64 {
    records.iter().map(|r| r.end_s).fold(0.0, f64::max)
}

/// Output tokens per second in bins of `bin_s` from `t = 0`, as a step line (successful
/// requests only, tokens spread over the chunks as the statistics do).
pub fn throughput_points(records: &[RequestRecord], bin_s: f64) -> Vec<(f64, f64)> {
    let num_bins = (run_end_s(records) / bin_s).ceil().max(1.0) as usize;
    let mut tokens = vec![0usize; num_bins];
    for record in records.iter().filter(|r| r.is_success()) {
        for (t, num_tokens) in token_arrivals(record) {
            let bin = ((t / bin_s).floor().max(0.0) as usize).min(num_bins - 1);
            tokens[bin] += num_tokens;
        }
    }
    let changes: Vec<(f64, f64)> = tokens
        .iter()
        .enumerate()
        .map(|(bin, &n)| (bin as f64 * bin_s, n as f64 / bin_s))
        .collect();
    step_points(&changes, num_bins as f64 * bin_s)
}

/// Requests in flight over time as a step line: exact up to [`MAX_CONCURRENCY_STEPS`]
/// changes, else the peak in each bin of `bin_s`.
pub fn concurrency_points(records: &[RequestRecord], bin_s: f64) -> Vec<(f64, f64)> {
    let steps = concurrency_steps(records);
    let end_s = run_end_s(records);
    if steps.len() <= MAX_CONCURRENCY_STEPS {
        let changes: Vec<(f64, f64)> = steps.iter().map(|&(t, n)| (t, n as f64)).collect();
        return step_points(&changes, end_s);
    }
    let num_bins = (end_s / bin_s).ceil().max(1.0) as usize;
    let mut peaks = vec![0usize; num_bins];
    let mut level = 0;
    let mut steps_iter = steps.iter().peekable();
    for (bin, peak) in peaks.iter_mut().enumerate() {
        let bin_end_s = (bin + 1) as f64 * bin_s;
        *peak = level;
        while let Some(&&(t, next)) = steps_iter.peek() {
            if t >= bin_end_s {
                break;
            }
            level = next;
            *peak = (*peak).max(level);
            steps_iter.next();
        }
    }
    let changes: Vec<(f64, f64)> = peaks
        .iter()
        .enumerate()
        .map(|(bin, &n)| (bin as f64 * bin_s, n as f64))
        .collect();
    step_points(&changes, num_bins as f64 * bin_s)
}

/// The two over-time charts, or a note that they need the records.
pub fn over_time_section(results: &[&ReportResult]) -> String {
    let with_records: Vec<(&str, &[RequestRecord])> = results
        .iter()
        .filter_map(|r| Some((r.label.as_str(), r.records.as_deref()?)))
        .collect();
    if with_records.is_empty() {
        return section(
            "over-time",
            "Throughput and concurrency over time",
            &note("These charts need the per-request records: run serve with --save-detailed."),
        );
    }
    let longest_s = with_records
        .iter()
        .map(|(_, records)| run_end_s(records))
        .fold(0.0, f64::max);
    let bin_s = bin_width_s(longest_s);
    let series = |points: PointsOverTime| -> Vec<Series> {
        with_records
            .iter()
            .map(|(label, records)| Series {
                label: label.to_string(),
                points: points(records, bin_s),
            })
            .collect()
    };
    let throughput = Chart {
        title: "Output throughput over time".into(),
        x_label: "Time since the run's start (s)".into(),
        y_label: "Output tokens/s".into(),
        series: series(throughput_points),
    };
    let concurrency = Chart {
        title: "Requests in flight over time".into(),
        x_label: "Time since the run's start (s)".into(),
        y_label: "Requests in flight".into(),
        series: series(concurrency_points),
    };
    let caption = format!("Output tokens received per second, in bins of {bin_s} s.");
    section(
        "over-time",
        "Throughput and concurrency over time",
        &charts_row(&[
            line_figure("chart-output-throughput", &throughput, &caption),
            line_figure(
                "chart-concurrency",
                &concurrency,
                "Requests sent and not yet answered (failed ones included).",
            ),
        ]),
    )
}
