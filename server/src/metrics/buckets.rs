//! Histogram bucket boundaries: vLLM's defaults, the overrides the server's flags pass
//! (`--ttft-buckets`, `--itl-buckets`, `--e2e-buckets`), and their validation.

use super::error::MetricsError;

/// vLLM's `vllm:time_to_first_token_seconds` buckets.
const DEFAULT_TTFT_S: [f64; 22] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// vLLM's `vllm:inter_token_latency_seconds` and `vllm:request_time_per_output_token_seconds`
/// buckets.
const DEFAULT_ITL_S: [f64; 19] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// vLLM's request-time buckets: end-to-end, queue, inference, prefill and decode time.
const DEFAULT_E2E_S: [f64; 21] = [
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// vLLM's `vllm:request_num_preemptions` buckets (the first holds the never-preempted too).
pub(super) const REQUEST_NUM_PREEMPTIONS_BUCKETS: [f64; 7] = [1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0];

/// vLLM's `vllm:request_params_n` buckets.
pub(super) const REQUEST_PARAMS_N_BUCKETS: [f64; 5] = [1.0, 2.0, 5.0, 10.0, 20.0];

/// prometheus-fastapi-instrumentator's `http_request_duration_seconds` buckets.
pub(super) const HTTP_DURATION_S: [f64; 3] = [0.1, 0.5, 1.0];

/// prometheus-fastapi-instrumentator's `http_request_duration_highr_seconds` buckets.
pub(super) const HTTP_DURATION_HIGHR_S: [f64; 21] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
    7.5, 10.0, 30.0, 60.0,
];

/// Upper bounds, in seconds, of the configurable latency histograms (`+Inf` is implicit).
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramBuckets {
    /// Time to first token (`--ttft-buckets`).
    pub ttft_s: Vec<f64>,
    /// Inter-token latency and request time per output token (`--itl-buckets`).
    pub itl_s: Vec<f64>,
    /// The request-time family: end-to-end, queue, inference, prefill and decode time
    /// (`--e2e-buckets`).
    pub e2e_s: Vec<f64>,
}

impl Default for HistogramBuckets {
    /// vLLM's buckets.
    fn default() -> Self {
        Self {
            ttft_s: DEFAULT_TTFT_S.to_vec(),
            itl_s: DEFAULT_ITL_S.to_vec(),
            e2e_s: DEFAULT_E2E_S.to_vec(),
        }
    }
}

impl HistogramBuckets {
    /// Every list non-empty, finite and strictly increasing.
    pub fn validate(&self) -> Result<(), MetricsError> {
        validate_buckets("--ttft-buckets", &self.ttft_s)?;
        validate_buckets("--itl-buckets", &self.itl_s)?;
        validate_buckets("--e2e-buckets", &self.e2e_s)
    }
}

/// Checks one list of upper bounds; `flag` names it in the error.
pub fn validate_buckets(flag: &'static str, buckets: &[f64]) -> Result<(), MetricsError> {
    if buckets.is_empty() {
        return Err(MetricsError::EmptyBuckets { flag });
    }
    if let Some(&value) = buckets.iter().find(|b| !b.is_finite()) {
        return Err(MetricsError::NonFiniteBucket { flag, value });
    }
    if let Some(pair) = buckets.windows(2).find(|pair| pair[0] >= pair[1]) {
        return Err(MetricsError::UnorderedBuckets {
            flag,
            previous: pair[0],
            next: pair[1],
        });
    }
    Ok(())
}

/// Parses a flag value such as `0.05,0.1,0.5,1` (seconds, comma-separated, spaces allowed) and
/// checks it: usable as a clap `value_parser`.
pub fn parse_buckets(text: &str) -> Result<Vec<f64>, MetricsError> {
    let buckets = text
        .split(',')
        .map(|item| {
            let item = item.trim();
            item.parse::<f64>()
                .map_err(|_| MetricsError::UnparsableBucket {
                    text: item.to_string(),
                })
        })
        .collect::<Result<Vec<f64>, _>>()?;
    validate_buckets("bucket list", &buckets)?;
    Ok(buckets)
}

/// vLLM's token-count buckets: 1, 2, 5, 10, 20, 50, … up to and including `max_value`.
pub(super) fn build_1_2_5_buckets(max_value: usize) -> Vec<f64> {
    let max_value = max_value.max(1) as u128;
    let mut buckets = Vec::new();
    let mut power: u128 = 1;
    loop {
        for mantissa in [1, 2, 5] {
            let value = mantissa * power;
            if value > max_value {
                return buckets;
            }
            buckets.push(value as f64);
        }
        power *= 10;
    }
}
