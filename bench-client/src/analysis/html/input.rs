//! What a report is made of: saved results (`serve --save-result`, vLLM's files too) and sweep
//! summaries (`sweep`'s `summary.json`), read from files or handed over in memory.

use std::path::Path;

use serde_json::Value;

use crate::analysis::scrape::ServerSideStats;
use crate::analysis::sweep::{SummaryRow, SweepAxis, SweepSummary};
use crate::record::RequestRecord;

#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not JSON: {source}")]
    NotJson {
        path: String,
        source: serde_json::Error,
    },
    #[error("{label}: {reason}")]
    Invalid { label: String, reason: String },
    #[error("a report needs at least one result")]
    NoInputs,
}

/// One saved result, with the parts the charts need taken out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportResult {
    /// How the report names it (a file name, or `run 2`).
    pub label: String,
    /// The whole result: vLLM's keys and ours under `pagoda`.
    pub result: Value,
    /// `pagoda.records`: saved with `--save-detailed`.
    pub records: Option<Vec<RequestRecord>>,
    /// `pagoda.server_side`: saved with `--scrape-metrics`.
    pub server_side: Option<ServerSideStats>,
    /// `pagoda.run.start_unix_s`: the wall-clock time of the client's `t = 0`.
    pub start_unix_s: Option<f64>,
}

/// A sweep's `summary.json`: one row per load, its axis, and the knee found at the time.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepFile {
    pub label: String,
    pub summary: SweepSummary,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReportInput {
    Result(Box<ReportResult>),
    Sweep(SweepFile),
}

/// Reads a result or sweep summary file, labelled with its file name.
pub fn read_input(path: &Path) -> Result<ReportInput, HtmlError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| HtmlError::Read {
        path: shown.clone(),
        source,
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|source| HtmlError::NotJson {
        path: shown.clone(),
        source,
    })?;
    let label = path
        .file_name()
        .map_or(shown, |name| name.to_string_lossy().into_owned());
    parse_input(&label, value)
}

/// A result or a sweep summary (an object with `axis` and `rows`), named `label`.
pub fn parse_input(label: &str, value: Value) -> Result<ReportInput, HtmlError> {
    let invalid = |reason: String| HtmlError::Invalid {
        label: label.to_string(),
        reason,
    };
    if !value.is_object() {
        return Err(invalid("not a JSON object".into()));
    }
    if value.get("axis").is_some() && value.get("rows").is_some() {
        let summary = sweep_summary(&value).map_err(invalid)?;
        return Ok(ReportInput::Sweep(SweepFile {
            label: label.to_string(),
            summary,
        }));
    }
    let part = |key: &str| value.pointer(&format!("/pagoda/{key}")).cloned();
    let records = part("records")
        .map(serde_json::from_value::<Vec<RequestRecord>>)
        .transpose()
        .map_err(|e| invalid(format!("pagoda.records: {e}")))?;
    let server_side = part("server_side")
        .map(serde_json::from_value::<ServerSideStats>)
        .transpose()
        .map_err(|e| invalid(format!("pagoda.server_side: {e}")))?;
    let start_unix_s = value
        .pointer("/pagoda/run/start_unix_s")
        .and_then(Value::as_f64);
    Ok(ReportInput::Result(Box::new(ReportResult {
        label: label.to_string(),
        result: value,
        records,
        server_side,
        start_unix_s,
    })))
}

/// The rows of a sweep's `summary.json` (see [`SweepSummary::to_json`]).
fn sweep_summary(value: &Value) -> Result<SweepSummary, String> {
    let axis = match value.get("axis").and_then(Value::as_str) {
        Some("request_rate") => SweepAxis::RequestRate(Vec::new()),
        Some("max_concurrency") => SweepAxis::Concurrency(Vec::new()),
        other => return Err(format!("unknown sweep axis {other:?}")),
    };
    let rows = value
        .get("rows")
        .and_then(Value::as_array)
        .ok_or("`rows` is not a list")?;
    let rows = rows
        .iter()
        .map(|row| {
            let load = row
                .get(axis.key())
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("a row has no number `{}`", axis.key()))?;
            // The summary names the failed requests `errors`; a result names them `failed`.
            let mut as_result = row.clone();
            if let (Some(object), Some(errors)) = (as_result.as_object_mut(), row.get("errors")) {
                object.insert("failed".into(), errors.clone());
            }
            Ok(SummaryRow::from_result(load, &as_result))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SweepSummary {
        load_key: axis.key(),
        load_label: axis.label(),
        rows,
    })
}
