//! Time slices (`--slice-duration S`): the run cut into consecutive windows of `S` seconds, each
//! with every statistic of [`WindowSummary`], so that warm-up, drift and one slow minute show
//! instead of disappearing into the run's averages.
//!
//! Slice `k` covers `[start + k·S, start + (k+1)·S)` from the run's start; the last one is cut
//! at the run's end (so it may be shorter; its throughputs divide by its own length) and
//! includes that end. What belongs to a slice is what [`summarize_window`] counts:
//! - requests **sent** in it (failed ones included): `num_sent`, and the latency metrics, so a
//!   request's TTFT and end-to-end latency belong to the slice it was sent in;
//! - requests that **ended** in it: `num_completed`, `num_failed`, the request throughput;
//! - output tokens that **arrived** in it: the output throughput.
//!
//! Every request is sent in exactly one slice and ends in exactly one, so the slices partition
//! the run: their `num_sent` add up to the run's requests, their completed and failed counts to
//! the run's.

use serde::{Deserialize, Serialize};

use super::options::SummaryOptions;
use super::steady_state::{summarize_window, WindowSummary};
use super::timeline::{run_end_s, run_start_s};
use crate::record::RequestRecord;

/// At most this many slices, so that a typo (`--slice-duration 0.001` on an hour) stays cheap.
pub const MAX_NUM_SLICES: usize = 10_000;

/// The run in slices of `slice_duration_s` seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSlices {
    pub slice_duration_s: f64,
    /// In time order, from the run's start to its end.
    pub slices: Vec<WindowSummary>,
}

/// The run's statistics per slice of `slice_duration_s` seconds (> 0); `None` without records.
/// Slices are lengthened (fewer of them) when there would be more than [`MAX_NUM_SLICES`].
pub fn time_slices(
    records: &[RequestRecord],
    slice_duration_s: f64,
    options: &SummaryOptions,
) -> Option<TimeSlices> {
    let start_s = run_start_s(records)?;
    let end_s = run_end_s(records)?.max(start_s);
    let span_s = end_s - start_s;
    let slice_duration_s = slice_duration_s.max(span_s / MAX_NUM_SLICES as f64);
    let num_slices = ((span_s / slice_duration_s).ceil() as usize).max(1);
    let slices = (0..num_slices)
        .map(|k| {
            let slice_start_s = start_s + k as f64 * slice_duration_s;
            let slice_end_s = if k + 1 == num_slices {
                // The window is half-open: the run's last moment belongs to the last slice.
                end_s.next_up()
            } else {
                start_s + (k + 1) as f64 * slice_duration_s
            };
            let mut window = summarize_window(records, (slice_start_s, slice_end_s), options);
            if k + 1 == num_slices {
                window.end_s = end_s;
            }
            window
        })
        .collect();
    Some(TimeSlices {
        slice_duration_s,
        slices,
    })
}

#[cfg(test)]
#[path = "slices_tests.rs"]
mod tests;
