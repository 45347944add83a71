//! How vLLM names a percentile in its result keys (`p99_ttft_ms`), shared by every JSON we write.

/// vLLM's key for percentile `p` of `metric`: `p99_ttft_ms`, `p99.9_ttft_ms`. The number is
/// written as Python's `str(int(p)) if int(p) == p else str(p)` (identical for any percentile
/// given with at most a few decimals; Python would write 0.00001 as `1e-05`).
pub fn percentile_key(p: f64, metric_name: &str) -> String {
    if p.fract() == 0.0 {
        format!("p{}_{metric_name}_ms", p as i64)
    } else {
        format!("p{p}_{metric_name}_ms")
    }
}
