//! HTTP series under prometheus-fastapi-instrumentator's names, as vLLM's API server exports
//! them: no namespace, status codes grouped ("2xx"), and the same excluded handlers.

use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

use super::buckets::{HTTP_DURATION_HIGHR_S, HTTP_DURATION_S};
use super::builder::register;
use super::error::MetricsError;
use super::names::*;

/// Handlers vLLM leaves out of its HTTP metrics; `record_http` ignores them too.
pub const EXCLUDED_HANDLERS: [&str; 6] = [
    "/metrics",
    "/health",
    "/load",
    "/ping",
    "/version",
    "/server_info",
];

/// The `handler` label of a request that matched no route, as the instrumentator writes it.
pub const UNMATCHED_HANDLER: &str = "none";

/// "2xx", "4xx", …: the instrumentator's grouped `status` label.
pub fn status_group(status: u16) -> String {
    format!("{}xx", status / 100)
}

#[derive(Debug)]
pub(super) struct HttpMetrics {
    requests: IntCounterVec,
    duration: HistogramVec,
    duration_highr: Histogram,
}

impl HttpMetrics {
    pub fn register(registry: &Registry) -> Result<Self, MetricsError> {
        let requests = IntCounterVec::new(
            Opts::new(
                HTTP_REQUESTS,
                "Total number of requests by method, status and handler.",
            ),
            &[LABEL_HANDLER, LABEL_METHOD, LABEL_STATUS],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                HTTP_REQUEST_DURATION,
                "Latency with only few buckets by handler. Made to be only used if aggregation \
                 by handler is important.",
            )
            .buckets(HTTP_DURATION_S.to_vec()),
            &[LABEL_HANDLER, LABEL_METHOD],
        )?;
        let duration_highr = Histogram::with_opts(
            HistogramOpts::new(
                HTTP_REQUEST_DURATION_HIGHR,
                "Latency with many buckets but no API specific labels. Made for more accurate \
                 percentile calculations.",
            )
            .buckets(HTTP_DURATION_HIGHR_S.to_vec()),
        )?;
        Ok(Self {
            requests: register(registry, requests)?,
            duration: register(registry, duration)?,
            duration_highr: register(registry, duration_highr)?,
        })
    }

    /// `handler` is the matched route template (`/v1/chat/completions`), or
    /// [`UNMATCHED_HANDLER`]; never the raw path, which would make one series per URL.
    pub fn record(&self, handler: &str, method: &str, status: u16, duration_s: f64) {
        if EXCLUDED_HANDLERS.contains(&handler) {
            return;
        }
        let status = status_group(status);
        self.requests
            .with_label_values(&[handler, method, status.as_str()])
            .inc();
        self.duration
            .with_label_values(&[handler, method])
            .observe(duration_s);
        self.duration_highr.observe(duration_s);
    }
}
