//! Measurement integrity: did the client send on schedule? A client that falls behind (out of
//! CPU, a stalled event loop) sends less load than asked and makes the server look better than
//! it is, so the summary says so instead of reporting the numbers as if nothing happened.
//!
//! Two lags per request:
//! - send lag = actual − target send (what vLLM calls `client_queue_time`);
//! - client lag = the part of the send lag that `--max-concurrency` does not explain: the time
//!   since the request was due *and* a slot was free (fewer than the limit in flight). Without a
//!   limit the two are equal.
//!
//! The client fell behind when (thresholds are [`IntegrityThresholds`] fields):
//! - the achieved request rate is below `min_rate_ratio` × the scheduled rate (checked only for a
//!   finite rate without `--max-concurrency`, which caps the rate by design); or
//! - the p99 client lag exceeds `max_p99_send_lag_ms`; or any exceeds `max_send_lag_ms`
//!   (not checked for an `inf` rate without a limit: everything is due at once and the lag just
//!   measures how long sending the burst took).

use serde::{Deserialize, Serialize};

use super::conversation_lag::conversation_client_lags_s;
use super::integrity_thresholds::IntegrityThresholds;
use super::options::SummaryOptions;
use super::percentile::percentile;
use super::slot_lag::{slot_client_lags_s, SlotSpan};
use crate::record::RequestRecord;

/// p50, p99 and max of a lag, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LagStats {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LagStats {
    fn from_lags_s(lags_s: &[f64]) -> Option<LagStats> {
        let mut sorted_ms: Vec<f64> = lags_s.iter().map(|s| s.max(0.0) * 1000.0).collect();
        sorted_ms.sort_by(f64::total_cmp);
        Some(LagStats {
            p50_ms: percentile(&sorted_ms, 50.0)?,
            p99_ms: percentile(&sorted_ms, 99.0)?,
            max_ms: *sorted_ms.last()?,
        })
    }
}

/// Whether the load was sent as scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendIntegrity {
    /// `--request-rate` when finite.
    pub configured_rate: Option<f64>,
    /// (requests − 1) ÷ (last − first target send); `None` for fewer than two requests or
    /// everything due at once.
    pub scheduled_rate: Option<f64>,
    /// (requests − 1) ÷ (last − first actual send).
    pub achieved_rate: Option<f64>,
    pub send_lag: Option<LagStats>,
    pub client_lag: Option<LagStats>,
    pub thresholds: IntegrityThresholds,
    pub fell_behind: bool,
    /// Why the client is judged to have fallen behind (empty when it did not).
    pub reasons: Vec<String>,
    /// Checks not made, and why.
    pub notes: Vec<String>,
}

impl SendIntegrity {
    /// Adds evidence found outside the records (the runner's "ran out of CPU" measurement).
    pub fn add_evidence(&mut self, reason: impl Into<String>) {
        self.fell_behind = true;
        self.reasons.push(reason.into());
    }

    fn note(&mut self, note: &str) {
        self.notes.push(note.to_string());
    }

    fn check_lag(&mut self, lag: LagStats) {
        let limits = self.thresholds;
        if lag.p99_ms > limits.max_p99_send_lag_ms {
            self.add_evidence(format!(
                "p99 client send lag {:.3} ms exceeds {} ms",
                lag.p99_ms, limits.max_p99_send_lag_ms
            ));
        }
        if lag.max_ms > limits.max_send_lag_ms {
            self.add_evidence(format!(
                "max client send lag {:.3} ms exceeds {} ms",
                lag.max_ms, limits.max_send_lag_ms
            ));
        }
    }
}

/// Checks the send schedule of a run (all its requests, failed ones included: they were sent).
pub(super) fn check_send_integrity(
    records: &[RequestRecord],
    options: &SummaryOptions,
) -> SendIntegrity {
    let thresholds = options.integrity;
    let scheduled_rate = rate_over(records.iter().map(|r| r.target_send_s));
    let achieved_rate = rate_over(records.iter().map(|r| r.actual_send_s));
    let send_lags_s: Vec<f64> = records.iter().map(RequestRecord::send_lag_s).collect();
    let client_lag = LagStats::from_lags_s(&client_lags_s(records, options.max_concurrency));
    let mut integrity = SendIntegrity {
        configured_rate: options.target_request_rate.filter(|r| r.is_finite()),
        scheduled_rate,
        achieved_rate,
        send_lag: LagStats::from_lags_s(&send_lags_s),
        client_lag,
        thresholds,
        fell_behind: false,
        reasons: Vec::new(),
        notes: Vec::new(),
    };
    if options.max_concurrency.is_some() {
        integrity.note("request rate not checked: --max-concurrency caps it by design");
    } else if let (Some(scheduled), Some(achieved)) = (scheduled_rate, achieved_rate) {
        if achieved < thresholds.min_rate_ratio * scheduled {
            integrity.add_evidence(format!(
                "achieved request rate {achieved:.3} req/s is below {:.0}% of the scheduled \
                 {scheduled:.3} req/s",
                thresholds.min_rate_ratio * 100.0
            ));
        }
    }
    if scheduled_rate.is_none() && options.max_concurrency.is_none() {
        integrity.note("send lag not checked: every request was due at once (a burst)");
    } else if let Some(lag) = client_lag {
        integrity.check_lag(lag);
    }
    integrity
}

/// (n − 1) ÷ (last − first) of `times_s`; `None` for fewer than two or a zero span.
fn rate_over(times_s: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut count, mut first, mut last) = (0usize, f64::INFINITY, f64::NEG_INFINITY);
    for t in times_s {
        count += 1;
        first = first.min(t);
        last = last.max(t);
    }
    let span_s = last - first;
    (count >= 2 && span_s > 0.0).then(|| (count - 1) as f64 / span_s)
}

/// Each request's client lag (see the module's doc), in seconds, in no particular order.
fn client_lags_s(records: &[RequestRecord], max_concurrency: Option<usize>) -> Vec<f64> {
    let Some(limit) = max_concurrency else {
        return records.iter().map(RequestRecord::send_lag_s).collect();
    };
    if records.iter().any(|r| r.conversation.is_some()) {
        return conversation_client_lags_s(records, limit);
    }
    let spans: Vec<SlotSpan> = records.iter().map(SlotSpan::of).collect();
    slot_client_lags_s(&spans, limit)
}

#[cfg(test)]
#[path = "integrity_tests.rs"]
mod tests;
