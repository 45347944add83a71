//! The steady-state window: the part of the run where the load is what was asked for, without
//! the ramp-up (requests in flight still climbing) and the drain (nothing left to send, the
//! last requests finishing on an emptying server).
//!
//! Automatic window `[start, end)`:
//! - `end` = the last send: from then on no request arrives, so the load only falls;
//! - the plateau level = the time-weighted median of the requests in flight over the sending
//!   period `[first send, last send)`;
//! - `start` = the first time the requests in flight reach the plateau level.
//!
//! There is none (`None`) when the window would be shorter than [`MIN_WINDOW_FRACTION`] of the
//! run: a burst (`--request-rate inf` without `--max-concurrency`) or a run too short for its
//! latencies never reaches a steady state, and statistics over a sliver would mislead.

use serde::{Deserialize, Serialize};

use super::goodput::meets_slos;
use super::itl::token_arrivals;
use super::metric_summary::{metric_summaries, MetricSummary};
use super::options::SummaryOptions;
use super::timeline::{concurrency_segments, concurrency_steps, mean_concurrency};
use super::timeline::{per_second, run_end_s, run_start_s};
use crate::record::RequestRecord;

/// The shortest automatic window, as a fraction of the run's duration.
pub const MIN_WINDOW_FRACTION: f64 = 0.1;

/// The automatic steady-state window of a run (see the module's doc), in seconds from the run's
/// start.
pub fn steady_state_window(records: &[RequestRecord]) -> Option<(f64, f64)> {
    let sends = records.iter().map(|r| r.actual_send_s);
    let first_send_s = sends.clone().min_by(f64::total_cmp)?;
    let last_send_s = sends.max_by(f64::total_cmp)?;
    let steps = concurrency_steps(records);
    let segments = concurrency_segments(&steps, first_send_s, last_send_s);
    let plateau = time_weighted_median(&segments)?;
    let mut start_s = first_send_s;
    for &(level, length_s) in &segments {
        if level >= plateau {
            break;
        }
        start_s += length_s;
    }
    let run_s = run_end_s(records)? - run_start_s(records)?;
    (last_send_s - start_s >= MIN_WINDOW_FRACTION * run_s && last_send_s > start_s)
        .then_some((start_s, last_send_s))
}

/// The level the step function spends at least half its time at or below.
fn time_weighted_median(segments: &[(usize, f64)]) -> Option<usize> {
    let mut by_level = segments.to_vec();
    by_level.sort_by_key(|&(level, _)| level);
    let total_s: f64 = segments.iter().map(|&(_, s)| s).sum();
    let mut cumulative_s = 0.0;
    for (level, length_s) in by_level {
        cumulative_s += length_s;
        if cumulative_s >= total_s / 2.0 {
            return Some(level);
        }
    }
    None
}

/// Statistics over a window of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowSummary {
    pub start_s: f64,
    pub end_s: f64,
    pub duration_s: f64,
    /// Requests sent in the window (failed ones included).
    pub num_sent: usize,
    /// Successful requests that ended in the window.
    pub num_completed: usize,
    /// Failed requests that ended in the window.
    pub num_failed: usize,
    /// Prompt tokens of the requests completed in the window.
    pub total_input_tokens: usize,
    /// Output tokens that arrived in the window (successful requests).
    pub total_output_tokens: usize,
    pub request_throughput: f64,
    pub input_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Completed-in-window requests meeting every SLO, per second; `None` without SLOs.
    pub request_goodput: Option<f64>,
    /// Time-averaged requests in flight.
    pub mean_concurrency: f64,
    /// Latency metrics of the successful requests sent in the window.
    pub metrics: Vec<MetricSummary>,
}

/// Statistics over `[start_s, end_s)` (see [`WindowSummary`]'s fields for what counts).
pub(super) fn summarize_window(
    records: &[RequestRecord],
    (start_s, end_s): (f64, f64),
    options: &SummaryOptions,
) -> WindowSummary {
    let inside = |t: f64| start_s <= t && t < end_s;
    let ended: Vec<&RequestRecord> = records.iter().filter(|r| inside(r.end_s)).collect();
    let completed = || ended.iter().filter(|r| r.is_success());
    let num_completed = completed().count();
    let total_input_tokens = completed().map(|r| r.input_tokens).sum();
    let total_output_tokens = records
        .iter()
        .filter(|r| r.is_success())
        .flat_map(token_arrivals)
        .filter(|&(t, _)| inside(t))
        .map(|(_, n)| n)
        .sum();
    let num_good = completed()
        .filter(|r| meets_slos(r, &options.goodput))
        .count();
    let duration_s = end_s - start_s;
    let sent = records.iter().filter(|r| inside(r.actual_send_s));
    WindowSummary {
        start_s,
        end_s,
        duration_s,
        num_sent: sent.clone().count(),
        num_completed,
        num_failed: ended.len() - num_completed,
        total_input_tokens,
        total_output_tokens,
        request_throughput: per_second(num_completed, duration_s),
        input_throughput: per_second(total_input_tokens, duration_s),
        output_throughput: per_second(total_output_tokens, duration_s),
        total_token_throughput: per_second(total_input_tokens + total_output_tokens, duration_s),
        request_goodput: (!options.goodput.is_empty()).then(|| per_second(num_good, duration_s)),
        mean_concurrency: mean_concurrency(&concurrency_steps(records), start_s, end_s),
        metrics: metric_summaries(sent, &options.percentiles),
    }
}

#[cfg(test)]
#[path = "steady_state_tests.rs"]
mod tests;
