//! [`ClientHealth`]: the numbers that show whether the client kept up with its schedule.

use serde::{Deserialize, Serialize};

use super::cpu::CpuUsage;
use super::dispatch::DispatchReport;
use super::lag::LagSummary;
use crate::record::RequestRecord;

/// Above these, [`ClientHealth::warnings`] says the client may have been the bottleneck.
const MAX_CLIENT_LAG_P99_S: f64 = 0.001;
const MIN_SEND_RATE_RATIO: f64 = 0.99;
const MAX_CPU_UTILIZATION: f64 = 0.9;

/// Whether the client kept up: the numbers that show it was not the bottleneck.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientHealth {
    /// Due → free to go: the wait for a concurrency slot.
    pub slot_wait_s: LagSummary,
    /// Free to go → handed to the runtime: timer overshoot and the dispatcher's own work.
    pub dispatcher_lag_s: LagSummary,
    /// Free to go → the HTTP request started: everything the client added.
    pub client_lag_s: LagSummary,
    pub peak_in_flight: usize,
    pub max_concurrency: Option<usize>,
    /// Requests per second the schedule asked for, over the sent requests' span (`None` when
    /// they were all due at once).
    pub target_send_rate: Option<f64>,
    /// Requests per second actually sent over the same requests.
    pub achieved_send_rate: Option<f64>,
    /// `None` where the process's CPU time cannot be read.
    pub cpu: Option<CpuUsage>,
}

/// What a run's dispatcher and request tasks saw, for [`ClientHealth::of_run`].
pub(super) struct RunEvidence<'a> {
    pub dispatch: &'a DispatchReport,
    /// Per request: the HTTP request started − free to go.
    pub client_lags_s: &'a [f64],
    pub peak_in_flight: usize,
    pub max_concurrency: Option<usize>,
    pub cpu: Option<CpuUsage>,
}

impl ClientHealth {
    /// The health of a finished run, from what it saw and its records.
    pub(super) fn of_run(evidence: RunEvidence<'_>, records: &[RequestRecord]) -> Self {
        let (target_send_rate, achieved_send_rate) = send_rates(records);
        Self {
            slot_wait_s: LagSummary::of(&evidence.dispatch.slot_waits_s),
            dispatcher_lag_s: LagSummary::of(&evidence.dispatch.lags_s),
            client_lag_s: LagSummary::of(evidence.client_lags_s),
            peak_in_flight: evidence.peak_in_flight,
            max_concurrency: evidence.max_concurrency,
            target_send_rate,
            achieved_send_rate,
            cpu: evidence.cpu,
        }
    }

    /// Why the client may have been the bottleneck; empty when nothing says so.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.client_lag_s.p99 > MAX_CLIENT_LAG_P99_S {
            warnings.push(format!(
                "p99 client send lag {:.2} ms is over {:.0} ms: the client sent late",
                self.client_lag_s.p99 * 1e3,
                MAX_CLIENT_LAG_P99_S * 1e3
            ));
        }
        if let (Some(target), Some(achieved)) = (self.target_send_rate, self.achieved_send_rate) {
            if achieved < MIN_SEND_RATE_RATIO * target && self.max_concurrency.is_none() {
                warnings.push(format!(
                    "sent {achieved:.2} req/s of the {target:.2} req/s scheduled"
                ));
            }
        }
        if let Some(cpu) = &self.cpu {
            if cpu.peak_utilization > MAX_CPU_UTILIZATION {
                warnings.push(format!(
                    "the client used {:.0}% of the machine's {} cores at its peak: it may have \
                     run out of CPU",
                    cpu.peak_utilization * 100.0,
                    cpu.num_cores
                ));
            }
        }
        warnings
    }
}

/// Target and achieved requests per second over the sent requests: `(n − 1) / span` of the due
/// times and of the actual send times.
fn send_rates(records: &[RequestRecord]) -> (Option<f64>, Option<f64>) {
    if records.len() < 2 {
        return (None, None);
    }
    let span = |times: &mut dyn Iterator<Item = f64>| {
        let (low, high) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
            (lo.min(t), hi.max(t))
        });
        high - low
    };
    let rate = |span_s: f64| (span_s > 0.0).then(|| (records.len() - 1) as f64 / span_s);
    let target = span(&mut records.iter().map(|r| r.target_send_s));
    let actual = span(&mut records.iter().map(|r| r.actual_send_s));
    (rate(target), rate(actual))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TokenCountSource;

    fn record(target_send_s: f64, actual_send_s: f64) -> RequestRecord {
        RequestRecord {
            index: 0,
            client_id: 0,
            model: None,
            conversation: None,
            target_send_s,
            actual_send_s,
            first_token_s: None,
            chunk_times_s: Vec::new(),
            end_s: actual_send_s,
            input_tokens: 0,
            output_tokens: 0,
            token_count_source: TokenCountSource::ServerUsage,
            expected_output_tokens: 0,
            error: None,
            error_message: None,
            num_retries: 0,
            generated_text: None,
        }
    }

    #[test]
    fn send_rates_over_the_span() {
        let on_time: Vec<_> = (0..11)
            .map(|i| record(i as f64 * 0.1, i as f64 * 0.1))
            .collect();
        let (target, achieved) = send_rates(&on_time);
        assert!((target.expect("rate") - 10.0).abs() < 1e-9);
        assert!((achieved.expect("rate") - 10.0).abs() < 1e-9);
        // Falling behind by 10 % over the run shows as a 10 % lower rate.
        let late: Vec<_> = (0..11)
            .map(|i| record(i as f64 * 0.1, i as f64 * 0.11))
            .collect();
        assert!((send_rates(&late).1.expect("rate") - 10.0 / 1.1).abs() < 1e-9);
        assert_eq!(send_rates(&[record(0.0, 0.0), record(0.0, 0.5)]).0, None);
        assert_eq!(send_rates(&[record(0.0, 0.0)]), (None, None));
    }

    #[test]
    fn warnings_name_what_went_wrong() {
        let mut health = ClientHealth {
            slot_wait_s: LagSummary::default(),
            dispatcher_lag_s: LagSummary::default(),
            client_lag_s: LagSummary::of(&[0.0001; 100]),
            peak_in_flight: 10,
            max_concurrency: None,
            target_send_rate: Some(200.0),
            achieved_send_rate: Some(199.9),
            cpu: None,
        };
        assert!(health.warnings().is_empty());
        health.client_lag_s = LagSummary::of(&[0.005; 100]);
        health.achieved_send_rate = Some(180.0);
        let warnings = health.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("5.00 ms"));
        assert!(warnings[1].contains("180.00 req/s"));
    }
}
