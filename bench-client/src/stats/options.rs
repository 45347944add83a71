//! What `summarize` is asked for, and the parsers for the command-line flags that ask it.

use serde::{Deserialize, Serialize};

use super::error::StatsError;
use super::goodput::Slo;
use super::integrity_thresholds::IntegrityThresholds;
use super::metric::Metric;

/// Which part of the run the steady-state statistics cover.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyStateWindow {
    /// No steady-state statistics.
    Off,
    /// The window [`super::steady_state_window`] finds (ramp-up and drain excluded).
    Auto,
    /// `[start_s, end_s)`, seconds from the run's start.
    Fixed { start_s: f64, end_s: f64 },
}

/// Options of [`super::summarize`].
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOptions {
    /// `--metric-percentiles` (vLLM's default: 99).
    pub percentiles: Vec<f64>,
    /// `--percentile-metrics`: which metrics the vLLM-compatible keys and the report show
    /// (vLLM's default: ttft, tpot, itl). The summary computes every metric regardless.
    pub percentile_metrics: Vec<Metric>,
    /// `--goodput` SLOs; empty: no goodput (`request_goodput` is null, as in vLLM).
    pub goodput: Vec<Slo>,
    pub steady_state: SteadyStateWindow,
    /// `--request-rate` when finite (`None` for `inf`: everything due at once).
    pub target_request_rate: Option<f64>,
    /// `--max-concurrency` (for a merged run: the total over clients). Send lag spent waiting for
    /// a free slot is then expected and is not held against the client.
    pub max_concurrency: Option<usize>,
    pub integrity: IntegrityThresholds,
    /// `--slice-duration`: statistics per slice of this many seconds; `None`: no slices.
    pub slice_duration_s: Option<f64>,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            percentiles: vec![99.0],
            percentile_metrics: Metric::VLLM_DEFAULT.to_vec(),
            goodput: Vec::new(),
            steady_state: SteadyStateWindow::Auto,
            target_request_rate: None,
            max_concurrency: None,
            integrity: IntegrityThresholds::default(),
            slice_duration_s: None,
        }
    }
}

/// Parses `--metric-percentiles`, e.g. `"50,90,99,99.9"`: comma-separated numbers in `[0, 100]`.
pub fn parse_percentiles(list: &str) -> Result<Vec<f64>, StatsError> {
    list.split(',')
        .map(|item| {
            let p: f64 = item
                .trim()
                .parse()
                .map_err(|_| StatsError::InvalidPercentile(item.to_string()))?;
            if (0.0..=100.0).contains(&p) {
                Ok(p)
            } else {
                Err(StatsError::InvalidPercentile(item.to_string()))
            }
        })
        .collect()
}

/// Parses `--percentile-metrics`, e.g. `"ttft,tpot,itl,e2el"` (names: [`Metric::name`]).
pub fn parse_percentile_metrics(list: &str) -> Result<Vec<Metric>, StatsError> {
    let mut metrics = Vec::new();
    for metric in list.split(',').map(Metric::parse) {
        let metric = metric?;
        if !metrics.contains(&metric) {
            metrics.push(metric);
        }
    }
    Ok(metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_parse_and_validate() {
        assert_eq!(
            parse_percentiles("50, 90,99,99.9").ok(),
            Some(vec![50.0, 90.0, 99.0, 99.9])
        );
        assert_eq!(parse_percentiles("0,100").ok(), Some(vec![0.0, 100.0]));
        for bad in ["", "99,", "101", "-1", "nan", "p99"] {
            assert!(parse_percentiles(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn percentile_metrics_parse() {
        assert_eq!(
            parse_percentile_metrics("ttft,tpot,itl,e2el,ttst,itl_per_token,ttft").ok(),
            Some(vec![
                Metric::Ttft,
                Metric::Tpot,
                Metric::ItlPerChunk,
                Metric::E2el,
                Metric::TimeToSecondToken,
                Metric::ItlPerToken,
            ])
        );
        assert!(parse_percentile_metrics("ttft,latency").is_err());
    }
}
