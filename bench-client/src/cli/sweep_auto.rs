//! `pagoda-bench sweep --auto-rates N`: a rate sweep that finds its own range, as guidellm's
//! `sweep` profile does. Two closed-loop calibration runs come first: one request at a time
//! (what the server completes serially: the lowest rate worth measuring) and every request at
//! once, under `--max-concurrency` when given (the most it completes). Then N open-loop rates
//! evenly spaced from the first throughput to the second are swept as `--request-rates` would.

use std::future::Future;
use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use crate::analysis::sweep::SweepAxis;
use crate::cli::serve_args::ServeArgs;
use crate::cli::serve_cmd::combine_runs;
use crate::cli::sweep_output::write_json;

/// Where the calibration runs' results go, inside the sweep's directory.
pub const CALIBRATION_DIR: &str = "calibration";

/// The request rates of an automatic sweep, after running its two calibrations.
pub async fn auto_rate_axis<F, Fut>(
    serve: &ServeArgs,
    num_rates: usize,
    dir: &Path,
    measure: &mut F,
) -> anyhow::Result<SweepAxis>
where
    F: FnMut(ServeArgs) -> Fut,
    Fut: Future<Output = anyhow::Result<Vec<Value>>>,
{
    let mut serial = serve.clone();
    serial.request_rate = "inf".into();
    serial.max_concurrency = Some(1);
    let low = calibrate("synchronous", serial, dir, measure).await?;
    let mut saturated = serve.clone();
    saturated.request_rate = "inf".into();
    let high = calibrate("throughput", saturated, dir, measure).await?;
    anyhow::ensure!(
        high > low,
        "--auto-rates: the server completed {high:.3} req/s with every request in flight and \
         {low:.3} req/s one at a time, so there is no range of rates to sweep (is \
         --max-concurrency 1, or the server serving one request at a time?)"
    );
    let rates = evenly_spaced(low, high, num_rates);
    let listed: Vec<String> = rates.iter().map(f64::to_string).collect();
    eprintln!(
        "sweep: {low:.3} req/s one at a time, {high:.3} req/s all at once: rates {}",
        listed.join(",")
    );
    Ok(SweepAxis::RequestRate(rates))
}

/// One calibration run: its request throughput; its result saved as `calibration/<name>.json`.
async fn calibrate<F, Fut>(
    name: &str,
    serve: ServeArgs,
    dir: &Path,
    measure: &mut F,
) -> anyhow::Result<f64>
where
    F: FnMut(ServeArgs) -> Fut,
    Fut: Future<Output = anyhow::Result<Vec<Value>>>,
{
    eprintln!("sweep: calibration run `{name}`");
    let runs = measure(serve)
        .await
        .with_context(|| format!("the calibration run `{name}` failed"))?;
    let result = combine_runs(&runs);
    write_json(
        &dir.join(CALIBRATION_DIR).join(format!("{name}.json")),
        &result,
    )?;
    let throughput = result["request_throughput"].as_f64().unwrap_or(0.0);
    anyhow::ensure!(
        throughput > 0.0 && throughput.is_finite(),
        "the calibration run `{name}` completed no request"
    );
    Ok(throughput)
}

/// `n` rates from `low` to `high`, both included, evenly spaced, each rounded to three
/// significant digits (rates a reader can type again), without repeats.
pub fn evenly_spaced(low: f64, high: f64, n: usize) -> Vec<f64> {
    let steps = n.saturating_sub(1).max(1) as f64;
    let mut rates: Vec<f64> = (0..n)
        .map(|i| significant(low + (high - low) * i as f64 / steps, 3))
        .collect();
    rates.dedup();
    rates
}

fn significant(value: f64, digits: i32) -> f64 {
    if value <= 0.0 {
        return value;
    }
    let scale = 10f64.powi(digits - 1 - value.log10().floor() as i32);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_span_the_range_evenly_with_three_digits() {
        assert_eq!(evenly_spaced(1.0, 4.0, 4), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(evenly_spaced(0.123456, 12.3456, 2), [0.123, 12.3]);
        assert_eq!(evenly_spaced(1.0, 1.001, 3), [1.0]);
        let rates = evenly_spaced(0.7, 9.1, 10);
        assert_eq!(rates.len(), 10);
        assert_eq!((rates[0], rates[9]), (0.7, 9.1));
        assert!(rates.windows(2).all(|w| w[0] < w[1]));
    }
}
