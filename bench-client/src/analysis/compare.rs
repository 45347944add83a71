//! Saved results side by side: deltas of the key metrics against a baseline with regressions
//! flagged ([`compare_results`]), and the mean/stddev/CV of repeated runs ([`aggregate_runs`]).
//!
//! Results are `--save-result` JSON objects with `vllm bench serve`'s keys, read as
//! `serde_json::Value`, so files from vLLM and from pagoda-bench compare alike.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::stats::StructuredOutputMeta;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a result: {reason}")]
    NotAResult { path: String, reason: String },
    #[error("compare needs at least two results, got {0}")]
    TooFewResults(usize),
}

/// Reads a saved result; it must be a JSON object.
pub fn read_result(path: &Path) -> Result<Value, CompareError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Read {
        path: shown.clone(),
        source,
    })?;
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(CompareError::NotAResult {
            path: shown,
            reason: "not a JSON object".into(),
        }),
        Err(e) => Err(CompareError::NotAResult {
            path: shown,
            reason: e.to_string(),
        }),
    }
}

/// A finite number under `key`. vLLM writes an unlimited `request_rate` as the string `"inf"`,
/// which reads as infinity here; other strings, booleans and arrays are not metrics.
pub fn metric(result: &Value, key: &str) -> Option<f64> {
    match result.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s.eq_ignore_ascii_case("inf") => Some(f64::INFINITY),
        _ => None,
    }
}

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// The metrics `compare` shows, in order, and which way is better.
pub const KEY_METRICS: [(&str, Better); 15] = [
    ("request_throughput", Better::Higher),
    ("request_goodput", Better::Higher),
    ("output_throughput", Better::Higher),
    ("total_token_throughput", Better::Higher),
    ("mean_ttft_ms", Better::Lower),
    ("median_ttft_ms", Better::Lower),
    ("p99_ttft_ms", Better::Lower),
    ("mean_tpot_ms", Better::Lower),
    ("median_tpot_ms", Better::Lower),
    ("p99_tpot_ms", Better::Lower),
    ("mean_itl_ms", Better::Lower),
    ("p99_itl_ms", Better::Lower),
    ("mean_e2el_ms", Better::Lower),
    ("median_e2el_ms", Better::Lower),
    ("p99_e2el_ms", Better::Lower),
];

/// One metric of one run against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    pub key: &'static str,
    pub better: Better,
    pub baseline: f64,
    pub value: f64,
    pub delta: f64,
    /// `None` when the baseline is 0.
    pub delta_pct: Option<f64>,
    /// Worse than the baseline by more than the threshold, in the metric's bad direction.
    pub regression: bool,
}

/// One result against the baseline. Metrics missing from either side are left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunComparison {
    pub label: String,
    /// This run's schema, JSON mode or tools ([`structured_output_of`]); `None` for free text.
    pub structured_output: Option<String>,
    pub deltas: Vec<Delta>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    /// The baseline's schema, JSON mode or tools; `None` for free text.
    pub baseline_structured_output: Option<String>,
    pub regression_threshold_pct: f64,
    pub runs: Vec<RunComparison>,
}

/// Compares every result after the first against the first, the baseline.
pub fn compare_results(
    results: &[(String, Value)],
    regression_threshold_pct: f64,
) -> Result<Comparison, CompareError> {
    let [(baseline_label, baseline), others @ ..] = results else {
        return Err(CompareError::TooFewResults(0));
    };
    if others.is_empty() {
        return Err(CompareError::TooFewResults(1));
    }
    let runs = others
        .iter()
        .map(|(label, result)| RunComparison {
            label: label.clone(),
            structured_output: structured_output_of(result),
            deltas: KEY_METRICS
                .iter()
                .filter_map(|&(key, better)| {
                    delta(
                        key,
                        better,
                        metric(baseline, key)?,
                        metric(result, key)?,
                        regression_threshold_pct,
                    )
                })
                .collect(),
        })
        .collect();
    Ok(Comparison {
        baseline: baseline_label.clone(),
        baseline_structured_output: structured_output_of(baseline),
        regression_threshold_pct,
        runs,
    })
}

/// A result's `pagoda.run.structured_output`, described (`json_schema (s.json, …)`); `None`
/// for free text and for results without it (vLLM's, older ones).
pub fn structured_output_of(result: &Value) -> Option<String> {
    let meta = result.pointer("/pagoda/run/structured_output")?;
    serde_json::from_value::<StructuredOutputMeta>(meta.clone())
        .ok()
        .map(|meta| meta.describe())
}

fn delta(
    key: &'static str,
    better: Better,
    baseline: f64,
    value: f64,
    threshold_pct: f64,
) -> Option<Delta> {
    if !(baseline.is_finite() && value.is_finite()) {
        return None;
    }
    let delta_pct = (baseline != 0.0).then(|| 100.0 * (value - baseline) / baseline.abs());
    let regression = delta_pct.is_some_and(|pct| match better {
        Better::Higher => pct < -threshold_pct,
        Better::Lower => pct > threshold_pct,
    });
    Some(Delta {
        key,
        better,
        baseline,
        value,
        delta: value - baseline,
        delta_pct,
        regression,
    })
}

impl Comparison {
    pub fn has_regressions(&self) -> bool {
        self.runs
            .iter()
            .any(|run| run.deltas.iter().any(|d| d.regression))
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// One table per compared result; `REGRESSION` marks the flagged rows.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for run in &self.runs {
            out.push_str(&format!(
                "{} vs {} (baseline); regression threshold {}%\n",
                run.label, self.baseline, self.regression_threshold_pct
            ));
            if run.structured_output.is_some() || self.baseline_structured_output.is_some() {
                let describe = |mode: &Option<String>| mode.clone().unwrap_or("none".into());
                out.push_str(&format!(
                    "structured output: {} vs {} (baseline)\n",
                    describe(&run.structured_output),
                    describe(&self.baseline_structured_output)
                ));
            }
            out.push_str(&format!(
                "{:<24} {:>14} {:>14} {:>14} {:>9}\n",
                "metric", "baseline", "value", "delta", "delta %"
            ));
            for d in &run.deltas {
                let pct = d
                    .delta_pct
                    .map_or("n/a".to_string(), |p| format!("{p:+.1}%"));
                let flag = if d.regression { "  REGRESSION" } else { "" };
                out.push_str(&format!(
                    "{:<24} {:>14.2} {:>14.2} {:>+14.2} {:>9}{flag}\n",
                    d.key, d.baseline, d.value, d.delta, pct
                ));
            }
            out.push('\n');
        }
        out
    }
}

/// Combines the results of `serve --num-runs N` into one result.
///
/// Every key holding a finite number in *every* run becomes its mean, so the aggregate reads
/// like a single result (for `compare`, plots, plans); `"stddev"`, `"cv"`, `"min"` and `"max"`
/// map the same keys to the sample standard deviation (n − 1; 0 for one run), the coefficient of
/// variation (stddev / |mean|; `null` when the mean is 0), and the extremes. Keys whose values
/// are equal non-numbers in every run (model id, `"inf"` rate) are copied; the rest (per-request
/// arrays, keys some runs lack) are dropped. `"num_runs"` says how many runs went in.
pub fn aggregate_runs(results: &[Value]) -> Value {
    let mut aggregate = Map::new();
    let mut spread: [Map<String, Value>; 4] = Default::default();
    let Some(Value::Object(first)) = results.first() else {
        return json!({ "num_runs": results.len() });
    };
    for (key, first_value) in first {
        let values: Vec<Option<&Value>> = results.iter().map(|r| r.get(key)).collect();
        let numbers: Option<Vec<f64>> = values
            .iter()
            .map(|v| v.and_then(Value::as_f64).filter(|x| x.is_finite()))
            .collect();
        if let (Some(numbers), true) = (numbers, first_value.is_number()) {
            let stats = RunStats::of(&numbers);
            aggregate.insert(key.clone(), json!(stats.mean));
            let cv = (stats.mean != 0.0).then(|| stats.stddev / stats.mean.abs());
            for (map, value) in spread.iter_mut().zip([
                json!(stats.stddev),
                json!(cv),
                json!(stats.min),
                json!(stats.max),
            ]) {
                map.insert(key.clone(), value);
            }
        } else if !first_value.is_array()
            && !first_value.is_object()
            && values.iter().all(|v| *v == Some(first_value))
        {
            aggregate.insert(key.clone(), first_value.clone());
        }
    }
    for (name, map) in ["stddev", "cv", "min", "max"].into_iter().zip(spread) {
        aggregate.insert(name.into(), Value::Object(map));
    }
    aggregate.insert("num_runs".into(), json!(results.len()));
    Value::Object(aggregate)
}

struct RunStats {
    mean: f64,
    stddev: f64,
    min: f64,
    max: f64,
}

impl RunStats {
    fn of(values: &[f64]) -> Self {
        let num_values = values.len() as f64;
        let mean = values.iter().sum::<f64>() / num_values;
        let sum_sq: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
        let stddev = if values.len() > 1 {
            (sum_sq / (num_values - 1.0)).sqrt()
        } else {
            0.0
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Self {
            mean,
            stddev,
            min,
            max,
        }
    }
}

#[cfg(test)]
mod tests;
