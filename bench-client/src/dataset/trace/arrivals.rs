//! When each request of a trace is due: `(timestamp − first timestamp) × time_scale` seconds after
//! the replay starts (a scale of 0.5 replays twice as fast, 2 half as fast), the first request at
//! `t = 0`. `duration_s` cuts the replay (no request at or after it) and `max_requests` keeps the
//! first requests only; both keep a prefix of the time-ordered trace.

use super::request::TraceRequest;
use crate::dataset::error::DatasetError;

/// How a trace's clock becomes the replay's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ReplayClock {
    pub time_scale: f64,
    pub duration_s: Option<f64>,
    pub max_requests: Option<usize>,
}

impl ReplayClock {
    pub fn validate(&self) -> Result<(), DatasetError> {
        let invalid = |message: String| Err(DatasetError::InvalidConfig(message));
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return invalid(format!(
                "--trace-time-scale {} must be a number > 0",
                self.time_scale
            ));
        }
        if let Some(duration_s) = self.duration_s {
            if !(duration_s.is_finite() && duration_s > 0.0) {
                return invalid(format!("--duration {duration_s} must be a number > 0"));
            }
        }
        if self.max_requests == Some(0) {
            return invalid("--trace-max-requests must be at least 1".into());
        }
        Ok(())
    }

    /// The arrival times of the first requests of `requests` (ordered by timestamp) that the
    /// replay sends: fewer than `requests` when the duration or the request cap cuts it.
    pub fn arrival_times(&self, requests: &[TraceRequest]) -> Vec<f64> {
        let Some(first) = requests.first() else {
            return Vec::new();
        };
        let max_requests = self.max_requests.unwrap_or(usize::MAX);
        requests
            .iter()
            .map(|r| (r.timestamp_s - first.timestamp_s) * self.time_scale)
            .take_while(|&t| self.duration_s.is_none_or(|d| t < d))
            .take(max_requests)
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(times_s: &[f64]) -> Vec<TraceRequest> {
        times_s
            .iter()
            .map(|&timestamp_s| TraceRequest {
                timestamp_s,
                input_tokens: 1,
                output_tokens: 1,
                hash_ids: vec![],
            })
            .collect()
    }

    fn clock(time_scale: f64, duration_s: Option<f64>, max_requests: Option<usize>) -> ReplayClock {
        ReplayClock {
            time_scale,
            duration_s,
            max_requests,
        }
    }

    #[test]
    fn times_start_at_zero_and_scale() {
        let trace = at(&[100.0, 100.0, 101.5, 104.0]);
        assert_eq!(
            clock(1.0, None, None).arrival_times(&trace),
            [0.0, 0.0, 1.5, 4.0]
        );
        assert_eq!(
            clock(0.5, None, None).arrival_times(&trace),
            [0.0, 0.0, 0.75, 2.0]
        );
        assert_eq!(
            clock(2.0, None, None).arrival_times(&trace),
            [0.0, 0.0, 3.0, 8.0]
        );
        assert!(clock(1.0, None, None).arrival_times(&[]).is_empty());
    }

    #[test]
    fn duration_and_cap_cut_the_trace() {
        let trace = at(&[10.0, 11.0, 12.0, 13.0, 14.0]);
        // No request at or after the duration, on the replay's (scaled) clock.
        assert_eq!(
            clock(1.0, Some(3.0), None).arrival_times(&trace),
            [0.0, 1.0, 2.0]
        );
        assert_eq!(
            clock(0.5, Some(1.5), None).arrival_times(&trace),
            [0.0, 0.5, 1.0]
        );
        assert_eq!(
            clock(1.0, Some(3.5), Some(2)).arrival_times(&trace),
            [0.0, 1.0]
        );
        assert_eq!(clock(1.0, None, Some(9)).arrival_times(&trace).len(), 5);
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in [
            clock(0.0, None, None),
            clock(-1.0, None, None),
            clock(f64::NAN, None, None),
            clock(1.0, Some(0.0), None),
            clock(1.0, None, Some(0)),
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(clock(0.01, Some(5.0), Some(1)).validate().is_ok());
    }
}
