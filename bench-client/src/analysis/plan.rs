//! Capacity planning from benchmark numbers, with the working shown.
//!
//! - [`plan_capacity`]: GPUs for a daily request volume,
//!   `ceil(requests_per_day / 86400 · peak_factor / (per_gpu_requests_per_s · (1 − headroom)))`.
//!   The per-GPU rate is a number, or a saved result's `request_throughput` or `request_goodput`
//!   ([`per_gpu_from_result`]; goodput is the honest choice when SLOs matter).
//! - [`roofline`]: the memory-bandwidth bound of decoding one stream. Each output token reads
//!   every weight and the stream's KV cache once, so
//!   `tokens_per_s ≈ bandwidth / (num_params · bytes_per_param + kv_bytes_per_token · context)`
//!   and `TPOT ≈ 1000 / tokens_per_s` ms; set against a result's measured TPOT, the ratio
//!   `roofline TPOT / measured TPOT` is the achieved fraction of the bound. (With a batch the
//!   weights are read once per step for every stream, so per-GPU throughput can far exceed this.)
//!
//! Units: bandwidth in decimal GB/s (10⁹ bytes/s), as vendors quote it.

use serde::Serialize;
use serde_json::Value;

use crate::analysis::compare::metric;

pub const SECONDS_PER_DAY: f64 = 86_400.0;
const BYTES_PER_GB: f64 = 1e9;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("{field} must be {requirement}, got {value}")]
    Invalid {
        field: &'static str,
        requirement: &'static str,
        value: f64,
    },
    #[error("the result has no positive {0}")]
    MissingMetric(&'static str),
    #[error("kv_bytes_per_token and context_tokens go together: give both or neither")]
    HalfKvCache,
}

/// `value` must be finite and satisfy `holds`, described by `requirement`.
fn check(
    field: &'static str,
    value: f64,
    requirement: &'static str,
    holds: fn(f64) -> bool,
) -> Result<(), PlanError> {
    if value.is_finite() && holds(value) {
        Ok(())
    } else {
        Err(PlanError::Invalid {
            field,
            requirement,
            value,
        })
    }
}

/// A number for the working: up to 3 decimals, trailing zeros dropped.
fn show(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// Lines of working, `name = formula with numbers = result`, under a heading.
fn working(heading: &str, lines: &[(&str, String, String)]) -> String {
    let mut out = format!("{heading}\n");
    for (name, formula, result) in lines {
        out.push_str(&format!("  {name:<16} = {formula} = {result}\n"));
    }
    out
}

/// Which rate of a saved result one GPU is credited with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerGpuMetric {
    RequestThroughput,
    RequestGoodput,
}

impl PerGpuMetric {
    pub fn key(self) -> &'static str {
        match self {
            PerGpuMetric::RequestThroughput => "request_throughput",
            PerGpuMetric::RequestGoodput => "request_goodput",
        }
    }
}

/// The per-GPU request rate of a result measured on one GPU (one server).
pub fn per_gpu_from_result(result: &Value, per_gpu: PerGpuMetric) -> Result<f64, PlanError> {
    metric(result, per_gpu.key())
        .filter(|rate| rate.is_finite() && *rate > 0.0)
        .ok_or(PlanError::MissingMetric(per_gpu.key()))
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CapacityInputs {
    pub requests_per_day: f64,
    /// Peak request rate over the average (≥ 1).
    pub peak_factor: f64,
    /// Fraction of each GPU's measured rate kept in reserve, in `[0, 1)`.
    pub headroom_fraction: f64,
    pub per_gpu_requests_per_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CapacityPlan {
    pub inputs: CapacityInputs,
    pub avg_requests_per_s: f64,
    pub peak_requests_per_s: f64,
    pub usable_per_gpu_requests_per_s: f64,
    /// Before rounding up.
    pub exact_num_gpus: f64,
    pub num_gpus: u64,
}

pub fn plan_capacity(inputs: CapacityInputs) -> Result<CapacityPlan, PlanError> {
    let i = inputs;
    check("requests_per_day", i.requests_per_day, ">= 0", |v| v >= 0.0)?;
    check(
        "peak_factor",
        i.peak_factor,
        ">= 1 (peak over average)",
        |v| v >= 1.0,
    )?;
    check("headroom_fraction", i.headroom_fraction, "in [0, 1)", |v| {
        (0.0..1.0).contains(&v)
    })?;
    check(
        "per_gpu_requests_per_s",
        i.per_gpu_requests_per_s,
        "> 0",
        |v| v > 0.0,
    )?;
    let avg_requests_per_s = i.requests_per_day / SECONDS_PER_DAY;
    let peak_requests_per_s = avg_requests_per_s * i.peak_factor;
    let usable_per_gpu_requests_per_s = i.per_gpu_requests_per_s * (1.0 - i.headroom_fraction);
    let exact_num_gpus = peak_requests_per_s / usable_per_gpu_requests_per_s;
    // Forgive float noise: 2.0000000000004 GPUs is 2 GPUs.
    let num_gpus = (exact_num_gpus * (1.0 - 1e-12)).ceil() as u64;
    Ok(CapacityPlan {
        inputs,
        avg_requests_per_s,
        peak_requests_per_s,
        usable_per_gpu_requests_per_s,
        exact_num_gpus,
        num_gpus,
    })
}

impl CapacityPlan {
    pub fn to_text(&self) -> String {
        let i = &self.inputs;
        let avg = show(self.avg_requests_per_s);
        let (peak, usable) = (
            show(self.peak_requests_per_s),
            show(self.usable_per_gpu_requests_per_s),
        );
        let per_gpu = format!(
            "{} req/s × (1 − {})",
            show(i.per_gpu_requests_per_s),
            show(i.headroom_fraction)
        );
        working(
            "GPUs = ceil(requests_per_day / 86400 × peak_factor / (per_gpu_req_s × (1 − headroom)))",
            &[
                ("average load", format!("{} req/day / 86400 s/day", show(i.requests_per_day)), format!("{avg} req/s")),
                ("peak load", format!("{avg} req/s × {}", show(i.peak_factor)), format!("{peak} req/s")),
                ("usable per GPU", per_gpu, format!("{usable} req/s")),
                ("GPUs", format!("ceil({peak} / {usable}) = ceil({})", show(self.exact_num_gpus)), self.num_gpus.to_string()),
            ],
        )
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RooflineInputs {
    pub num_params: f64,
    pub bytes_per_param: f64,
    pub memory_bandwidth_gb_per_s: f64,
    pub kv_bytes_per_token: Option<f64>,
    pub context_tokens: Option<f64>,
}

/// A result's TPOT against the roofline; fractions are `roofline TPOT / measured TPOT`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeasuredTpot {
    pub mean_tpot_ms: Option<f64>,
    pub median_tpot_ms: Option<f64>,
    pub mean_fraction: Option<f64>,
    pub median_fraction: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    pub inputs: RooflineInputs,
    pub weight_bytes: f64,
    pub kv_bytes: f64,
    pub bytes_per_token: f64,
    pub tokens_per_s: f64,
    pub tpot_ms: f64,
    pub measured: Option<MeasuredTpot>,
}

pub fn roofline(inputs: RooflineInputs) -> Result<Roofline, PlanError> {
    let (params, bytes_per_param) = (inputs.num_params, inputs.bytes_per_param);
    let bandwidth = inputs.memory_bandwidth_gb_per_s;
    check("num_params", params, "> 0", |v| v > 0.0)?;
    check("bytes_per_param", bytes_per_param, "> 0", |v| v > 0.0)?;
    check("memory_bandwidth_gb_per_s", bandwidth, "> 0", |v| v > 0.0)?;
    let kv_bytes = match (inputs.kv_bytes_per_token, inputs.context_tokens) {
        (None, None) => 0.0,
        (Some(per_token), Some(context)) => {
            check("kv_bytes_per_token", per_token, ">= 0", |v| v >= 0.0)?;
            check("context_tokens", context, ">= 0", |v| v >= 0.0)?;
            per_token * context
        }
        _ => return Err(PlanError::HalfKvCache),
    };
    let weight_bytes = params * bytes_per_param;
    let bytes_per_token = weight_bytes + kv_bytes;
    let tokens_per_s = bandwidth * BYTES_PER_GB / bytes_per_token;
    let tpot_ms = 1000.0 / tokens_per_s;
    Ok(Roofline {
        inputs,
        weight_bytes,
        kv_bytes,
        bytes_per_token,
        tokens_per_s,
        tpot_ms,
        measured: None,
    })
}

impl Roofline {
    /// Adds a result's measured mean and median TPOT.
    pub fn against(mut self, result: &Value) -> Self {
        let read = |key| metric(result, key).filter(|ms| ms.is_finite() && *ms > 0.0);
        let (mean, median) = (read("mean_tpot_ms"), read("median_tpot_ms"));
        self.measured = Some(MeasuredTpot {
            mean_tpot_ms: mean,
            median_tpot_ms: median,
            mean_fraction: mean.map(|ms| self.tpot_ms / ms),
            median_fraction: median.map(|ms| self.tpot_ms / ms),
        });
        self
    }

    pub fn to_text(&self) -> String {
        let i = &self.inputs;
        let gb = |bytes: f64| format!("{} GB", show(bytes / BYTES_PER_GB));
        let (tokens_per_s, tpot_ms) = (show(self.tokens_per_s), show(self.tpot_ms));
        let kv = (
            show(i.kv_bytes_per_token.unwrap_or(0.0)),
            show(i.context_tokens.unwrap_or(0.0)),
        );
        let bandwidth = show(i.memory_bandwidth_gb_per_s);
        let mut lines = vec![
            (
                "weights",
                format!("{} params × {} B", i.num_params, show(i.bytes_per_param)),
                gb(self.weight_bytes),
            ),
            (
                "KV cache",
                format!("{} B/token × {} tokens", kv.0, kv.1),
                gb(self.kv_bytes),
            ),
            (
                "bytes per token",
                format!("{} + {}", gb(self.weight_bytes), gb(self.kv_bytes)),
                gb(self.bytes_per_token),
            ),
            (
                "tokens/s",
                format!("{bandwidth} GB/s / {}", gb(self.bytes_per_token)),
                format!("{tokens_per_s} tok/s"),
            ),
            (
                "TPOT",
                format!("1000 / {tokens_per_s}"),
                format!("{tpot_ms} ms"),
            ),
        ];
        if let Some(m) = &self.measured {
            for (name, ms, fraction) in [
                ("vs mean TPOT", m.mean_tpot_ms, m.mean_fraction),
                ("vs median TPOT", m.median_tpot_ms, m.median_fraction),
            ] {
                if let (Some(ms), Some(fraction)) = (ms, fraction) {
                    let formula = format!("{tpot_ms} ms / {} ms measured", show(ms));
                    lines.push((
                        name,
                        formula,
                        format!("{}% of the roofline", show(100.0 * fraction)),
                    ));
                }
            }
        }
        working("decode tokens/s per stream ≈ bandwidth / (num_params × bytes_per_param + kv_bytes_per_token × context)", &lines)
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests;
