//! One summary row per sweep point, written as CSV (for spreadsheets) and JSON (for tools).
//!
//! p50 is read from `median_*` (always saved by `vllm bench serve`), or `p50_*` when only that
//! exists; p99 from `p99_*` (saved with the default `--metric-percentiles 99`). A metric missing
//! from a result stays empty (CSV) or `null` (JSON): nothing is made up.

use serde_json::{json, Map, Value};

use super::point::{SweepAxis, SweepPoint};
use crate::analysis::compare::metric;

/// The numbers a sweep report shows for one load.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SummaryRow {
    pub load: f64,
    pub request_throughput: Option<f64>,
    pub output_throughput: Option<f64>,
    pub p50_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub p50_tpot_ms: Option<f64>,
    pub p99_tpot_ms: Option<f64>,
    pub p50_itl_ms: Option<f64>,
    pub p99_itl_ms: Option<f64>,
    pub p50_e2el_ms: Option<f64>,
    pub p99_e2el_ms: Option<f64>,
    pub request_goodput: Option<f64>,
    pub num_completed: Option<f64>,
    pub num_errors: Option<f64>,
}

/// Column names after the load column, in file order; see [`SummaryRow::cells`].
pub const METRIC_COLUMNS: [&str; 13] = [
    "request_throughput",
    "output_throughput",
    "p50_ttft_ms",
    "p99_ttft_ms",
    "p50_tpot_ms",
    "p99_tpot_ms",
    "p50_itl_ms",
    "p99_itl_ms",
    "p50_e2el_ms",
    "p99_e2el_ms",
    "request_goodput",
    "completed",
    "errors",
];

impl SummaryRow {
    /// Reads the row's metrics from a saved result.
    pub fn from_result(load: f64, result: &Value) -> Self {
        let p50 = |name: &str| {
            metric(result, &format!("median_{name}")).or(metric(result, &format!("p50_{name}")))
        };
        let p99 = |name: &str| metric(result, &format!("p99_{name}"));
        Self {
            load,
            request_throughput: metric(result, "request_throughput"),
            output_throughput: metric(result, "output_throughput"),
            p50_ttft_ms: p50("ttft_ms"),
            p99_ttft_ms: p99("ttft_ms"),
            p50_tpot_ms: p50("tpot_ms"),
            p99_tpot_ms: p99("tpot_ms"),
            p50_itl_ms: p50("itl_ms"),
            p99_itl_ms: p99("itl_ms"),
            p50_e2el_ms: p50("e2el_ms"),
            p99_e2el_ms: p99("e2el_ms"),
            request_goodput: metric(result, "request_goodput"),
            num_completed: metric(result, "completed"),
            num_errors: count_errors(result),
        }
    }

    /// The metric cells in [`METRIC_COLUMNS`] order.
    pub fn cells(&self) -> [Option<f64>; 13] {
        [
            self.request_throughput,
            self.output_throughput,
            self.p50_ttft_ms,
            self.p99_ttft_ms,
            self.p50_tpot_ms,
            self.p99_tpot_ms,
            self.p50_itl_ms,
            self.p99_itl_ms,
            self.p50_e2el_ms,
            self.p99_e2el_ms,
            self.request_goodput,
            self.num_completed,
            self.num_errors,
        ]
    }
}

/// Failed requests: `failed` when saved, else the non-empty strings of `errors` (vLLM saves one
/// per request, empty on success), else `num_prompts - completed`.
fn count_errors(result: &Value) -> Option<f64> {
    if let Some(failed) = metric(result, "failed") {
        return Some(failed);
    }
    if let Some(errors) = result.get("errors").and_then(Value::as_array) {
        let num_failed = errors
            .iter()
            .filter(|e| match e {
                Value::Null => false,
                Value::String(text) => !text.is_empty(),
                _ => true,
            })
            .count();
        return Some(num_failed as f64);
    }
    Some(metric(result, "num_prompts")? - metric(result, "completed")?)
}

/// A sweep's rows, sorted by load, with the axis that names the load column.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSummary {
    /// `request_rate` or `max_concurrency` (see [`SweepAxis::key`]).
    pub load_key: &'static str,
    pub load_label: &'static str,
    pub rows: Vec<SummaryRow>,
}

/// Reduces a sweep's points to summary rows, sorted by load.
pub fn summarize(axis: &SweepAxis, points: &[SweepPoint]) -> SweepSummary {
    let mut rows: Vec<SummaryRow> = points
        .iter()
        .map(|p| SummaryRow::from_result(p.load, &p.result))
        .collect();
    rows.sort_by(|a, b| a.load.total_cmp(&b.load));
    SweepSummary {
        load_key: axis.key(),
        load_label: axis.label(),
        rows,
    }
}

impl SweepSummary {
    /// CSV with a header line; missing metrics are empty cells.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(self.load_key);
        for column in METRIC_COLUMNS {
            out.push(',');
            out.push_str(column);
        }
        out.push('\n');
        for row in &self.rows {
            out.push_str(&row.load.to_string());
            for cell in row.cells() {
                out.push(',');
                if let Some(value) = cell {
                    out.push_str(&value.to_string());
                }
            }
            out.push('\n');
        }
        out
    }

    /// `{"axis": load_key, "rows": [{load_key: .., request_throughput: .., ..}]}`; missing
    /// metrics are `null`.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let mut object = Map::new();
                object.insert(self.load_key.into(), json!(row.load));
                for (column, cell) in METRIC_COLUMNS.iter().zip(row.cells()) {
                    object.insert((*column).into(), json!(cell));
                }
                Value::Object(object)
            })
            .collect();
        json!({ "axis": self.load_key, "rows": rows })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn result(rate: f64) -> Value {
        json!({
            "request_rate": rate, "request_throughput": rate * 0.9, "output_throughput": rate * 100.0,
            "median_ttft_ms": 20.0, "p99_ttft_ms": 50.0, "median_tpot_ms": 8.0, "p99_tpot_ms": 12.0,
            "median_itl_ms": 7.5, "p99_itl_ms": 30.0, "median_e2el_ms": 900.0, "p99_e2el_ms": 1500.0,
            "request_goodput": rate * 0.8, "completed": 100, "errors": ["", "", "timeout", ""],
        })
    }

    #[test]
    fn rows_read_metrics_sorted_by_load() {
        let points = vec![
            SweepPoint {
                load: 4.0,
                result: result(4.0),
            },
            SweepPoint {
                load: 2.0,
                result: result(2.0),
            },
        ];
        let summary = summarize(&SweepAxis::RequestRate(vec![4.0, 2.0]), &points);
        let loads: Vec<f64> = summary.rows.iter().map(|r| r.load).collect();
        assert_eq!(loads, vec![2.0, 4.0]);
        let row = &summary.rows[0];
        assert_eq!(row.output_throughput, Some(200.0));
        assert_eq!(row.p50_ttft_ms, Some(20.0));
        assert_eq!(row.p99_itl_ms, Some(30.0));
        assert_eq!(row.num_completed, Some(100.0));
        assert_eq!(row.num_errors, Some(1.0));
    }

    #[test]
    fn p50_falls_back_and_errors_fall_back_to_prompts_minus_completed() {
        let value = json!({"p50_ttft_ms": 11.0, "num_prompts": 10, "completed": 7});
        let row = SummaryRow::from_result(1.0, &value);
        assert_eq!(row.p50_ttft_ms, Some(11.0));
        assert_eq!(row.num_errors, Some(3.0));
        assert_eq!(row.p99_ttft_ms, None);
        let failed = json!({"failed": 2, "errors": ["x", "y", "z"]});
        assert_eq!(SummaryRow::from_result(1.0, &failed).num_errors, Some(2.0));
    }

    #[test]
    fn csv_has_header_and_empty_cells_for_missing_metrics() {
        let points = vec![
            SweepPoint {
                load: 1.0,
                result: result(1.0),
            },
            SweepPoint {
                load: 8.0,
                result: json!({"output_throughput": 5.5}),
            },
        ];
        let csv = summarize(&SweepAxis::Concurrency(vec![1, 8]), &points).to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("max_concurrency,request_throughput,output_throughput,"));
        assert!(lines[0].ends_with(",request_goodput,completed,errors"));
        assert_eq!(lines[1].split(',').count(), 14);
        assert_eq!(lines[2], "8,,5.5,,,,,,,,,,,");
    }

    #[test]
    fn json_rows_name_the_load_and_keep_nulls() {
        let points = vec![SweepPoint {
            load: 3.0,
            result: json!({"p99_ttft_ms": 42.0}),
        }];
        let out = summarize(&SweepAxis::RequestRate(vec![3.0]), &points).to_json();
        assert_eq!(out["axis"], "request_rate");
        assert_eq!(out["rows"][0]["request_rate"], 3.0);
        assert_eq!(out["rows"][0]["p99_ttft_ms"], 42.0);
        assert!(out["rows"][0]["output_throughput"].is_null());
    }
}
