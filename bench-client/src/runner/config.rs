//! How a run is sent ([`RunConfig`]), and the checks of a schedule before it is.

use std::sync::Arc;
use std::time::Duration;

use super::outcome::RunError;
use crate::client::{RequestConfig, TokenCounter};
use crate::workload::RequestSpec;

/// `t = 0` is this long after `run` has warmed up, so the dispatcher thread is ready for the
/// first request.
pub(super) const START_DELAY: Duration = Duration::from_millis(20);

/// How a run is sent.
#[derive(Clone)]
pub struct RunConfig {
    /// Endpoint, URL, model, key, headers, sampling, per-request timeout, client id.
    pub request: RequestConfig,
    /// At most this many requests in flight; `None`: no limit (pure open loop).
    pub max_concurrency: Option<usize>,
    /// Requests sent before `t = 0` (the workload's first ones, cycled) and left out of the
    /// records; they also open connections.
    pub num_warmups: usize,
    /// No request is sent this long after `t = 0` or later; those in flight still finish (each
    /// within the request timeout).
    pub max_duration: Option<Duration>,
    /// The live progress line on stderr (only when it is a terminal).
    pub progress: bool,
    /// Counts the generated text when a server sends no usage.
    pub tokenizer: Option<Arc<TokenCounter>>,
    /// One-token probe requests per second beside the workload (`--probe-request-rate`);
    /// `None`: none.
    pub probe_rate_per_s: Option<f64>,
}

impl RunConfig {
    pub fn new(request: RequestConfig) -> Self {
        Self {
            request,
            max_concurrency: None,
            num_warmups: 0,
            max_duration: None,
            progress: false,
            tokenizer: None,
            probe_rate_per_s: None,
        }
    }
}

impl std::fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("request", &self.request)
            .field("max_concurrency", &self.max_concurrency)
            .field("num_warmups", &self.num_warmups)
            .field("max_duration", &self.max_duration)
            .field("progress", &self.progress)
            .field("tokenizer", &self.tokenizer.is_some())
            .field("probe_rate_per_s", &self.probe_rate_per_s)
            .finish()
    }
}

/// Checks that `specs` and `arrivals` go together and the schedule can be kept.
pub(super) fn validate(
    specs: &[RequestSpec],
    arrivals: &[f64],
    config: &RunConfig,
) -> Result<(), RunError> {
    if specs.len() != arrivals.len() {
        return Err(RunError::LengthMismatch {
            num_specs: specs.len(),
            num_arrivals: arrivals.len(),
        });
    }
    let mut previous = 0.0;
    for (index, &value) in arrivals.iter().enumerate() {
        if !value.is_finite() || value < previous {
            return Err(RunError::BadSchedule { index, value });
        }
        previous = value;
    }
    if config.max_concurrency == Some(0) {
        return Err(RunError::ZeroConcurrency);
    }
    if let Some(rate) = config.probe_rate_per_s {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(RunError::BadProbeRate(rate));
        }
    }
    Ok(())
}
