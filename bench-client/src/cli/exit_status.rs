//! When a benchmark run counts as failed, so that a CI job can trust `pagoda-bench`'s exit
//! status: every request failed, or more than `--max-failure-rate` of them did. The result file
//! and the report are written first, so a failed run still leaves its evidence. Requests the
//! client cancelled on purpose (`--request-cancellation-rate`) are not failures here.

use anyhow::bail;
use serde_json::Value;

use crate::record::ErrorKind;
use crate::stats::{error_label, BenchSummary};

/// A run's failures, as its result records them.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureCounts {
    pub num_completed: usize,
    pub num_failed: usize,
    /// `(label, count)` per error kind: `http_500`, `timeout`, `connection`, `stream`.
    pub by_kind: Vec<(String, usize)>,
}

impl FailureCounts {
    pub fn of(summary: &BenchSummary) -> Self {
        Self {
            num_completed: summary.num_completed,
            num_failed: summary.num_failed,
            by_kind: summary
                .errors_by_kind
                .iter()
                .map(|e| (e.label.clone(), e.count))
                .collect(),
        }
    }

    /// From a saved result: vLLM's `completed` and `failed`, and the kinds under
    /// `pagoda.summary.errors_by_kind` when present.
    pub fn of_result(result: &Value) -> Option<Self> {
        let count = |key: &str| result.get(key).and_then(Value::as_u64).map(|n| n as usize);
        let kinds = result.pointer("/pagoda/summary/errors_by_kind");
        let by_kind = kinds
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|kind| {
                let label = kind.get("label")?.as_str()?.to_string();
                Some((label, kind.get("count")?.as_u64()? as usize))
            })
            .collect();
        Some(Self {
            num_completed: count("completed")?,
            num_failed: count("failed")?,
            by_kind,
        })
    }
}

/// `Err` (exit status 1) when every request of the run failed, or when the failed fraction
/// exceeds `max_failure_rate` (0–1); names the error kinds. A run that sent nothing passes.
pub fn check_failures(counts: &FailureCounts, max_failure_rate: Option<f64>) -> anyhow::Result<()> {
    let is_cancelled = |label: &str| label == error_label(&ErrorKind::Cancelled);
    let num_cancelled: usize = counts
        .by_kind
        .iter()
        .filter(|(label, _)| is_cancelled(label))
        .map(|(_, count)| count)
        .sum();
    let num_failed = counts.num_failed.saturating_sub(num_cancelled);
    let num_requests = counts.num_completed + num_failed;
    if num_failed == 0 {
        return Ok(());
    }
    let rate = num_failed as f64 / num_requests as f64;
    let kinds: Vec<String> = counts
        .by_kind
        .iter()
        .filter(|(label, _)| !is_cancelled(label))
        .map(|(label, count)| format!("{count} × {label}"))
        .collect();
    let uncounted = match num_cancelled {
        0 => String::new(),
        n => format!(" ({n} cancelled by the client not counted)"),
    };
    let what = format!(
        "{num_failed} of {num_requests} requests failed{uncounted} ({:.1}%: {})",
        rate * 100.0,
        kinds.join(", ")
    );
    if counts.num_completed == 0 {
        bail!("{what}: every request failed");
    }
    match max_failure_rate {
        Some(max) if rate > max => bail!(
            "{what}, above --max-failure-rate {max} ({:.1}%)",
            max * 100.0
        ),
        _ => Ok(()),
    }
}

/// [`check_failures`] on every saved run result (vLLM's `completed` and `failed` keys); a value
/// without them passes.
pub fn check_result_failures(
    results: &[Value],
    max_failure_rate: Option<f64>,
) -> anyhow::Result<()> {
    for counts in results.iter().filter_map(FailureCounts::of_result) {
        check_failures(&counts, max_failure_rate)?;
    }
    if results.iter().any(was_interrupted) {
        bail!("interrupted (Ctrl-C): the result holds the requests sent before it");
    }
    Ok(())
}

/// Whether Ctrl-C stopped the run (`pagoda.interrupted`).
fn was_interrupted(result: &Value) -> bool {
    result.pointer("/pagoda/interrupted") == Some(&Value::Bool(true))
}

/// Parses `--max-failure-rate`: a fraction in `[0, 1]`.
pub fn parse_failure_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "{text:?}: expected a fraction between 0 and 1 (0.01 = 1%)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::{failed, streamed};
    use crate::stats::{summarize, SummaryOptions};

    fn summary(num_ok: usize, num_failed: usize) -> FailureCounts {
        let mut records: Vec<_> = (0..num_ok)
            .map(|i| streamed(i, 0.0, 0.0, &[0.1], 0.2, 1))
            .collect();
        records.extend((0..num_failed).map(|i| failed(num_ok + i, 0.0, 0.1, ErrorKind::Http(500))));
        FailureCounts::of(&summarize(&records, &SummaryOptions::default()))
    }

    #[test]
    fn saved_results_are_read_from_vllms_keys() {
        let result = serde_json::json!({"completed": 0, "failed": 3, "pagoda": {"summary": {
            "errors_by_kind": [{"kind": "timeout", "label": "timeout", "count": 3}]}}});
        let counts = FailureCounts::of_result(&result).expect("counts");
        assert_eq!(counts.by_kind, [("timeout".to_string(), 3)]);
        let error = check_result_failures(&[result], None).expect_err("all failed");
        assert!(error.to_string().contains("3 × timeout"), "{error}");
        let fine = serde_json::json!({"completed": 5, "failed": 0});
        assert!(check_result_failures(&[fine, serde_json::json!({})], Some(0.0)).is_ok());
    }

    #[test]
    fn an_all_failing_run_fails_whatever_the_limit() {
        let error = check_failures(&summary(0, 4), None).expect_err("all failed");
        let text = error.to_string();
        assert!(
            text.contains("4 of 4") && text.contains("http_500"),
            "{text}"
        );
        assert!(check_failures(&summary(0, 4), Some(1.0)).is_err());
    }

    #[test]
    fn the_limit_is_a_fraction_of_the_requests() {
        assert!(check_failures(&summary(9, 1), None).is_ok());
        assert!(check_failures(&summary(9, 1), Some(0.1)).is_ok());
        let error = check_failures(&summary(9, 1), Some(0.05)).expect_err("10% > 5%");
        assert!(error.to_string().contains("--max-failure-rate"), "{error}");
        assert!(check_failures(&summary(10, 0), Some(0.0)).is_ok());
        assert!(check_failures(&summary(0, 0), Some(0.0)).is_ok());
        let ok = serde_json::json!({"completed": 3, "failed": 0, "pagoda": {}});
        assert!(check_result_failures(std::slice::from_ref(&ok), None).is_ok());
        let interrupted =
            serde_json::json!({"completed": 3, "failed": 0, "pagoda": {"interrupted": true}});
        let error = check_result_failures(&[ok, interrupted], None).expect_err("interrupted");
        assert!(error.to_string().contains("interrupted"), "{error}");
    }

    #[test]
    fn requests_cancelled_on_purpose_are_not_failures() {
        let mut records: Vec<_> = (0..4)
            .map(|i| streamed(i, 0.0, 0.0, &[0.1], 0.2, 1))
            .collect();
        records.extend((4..10).map(|i| failed(i, 0.0, 0.1, ErrorKind::Cancelled)));
        let counts = FailureCounts::of(&summarize(&records, &SummaryOptions::default()));
        assert_eq!(
            counts.num_failed, 6,
            "vLLM's `failed` counts every request not completed"
        );
        assert!(check_failures(&counts, Some(0.0)).is_ok());
        // Every request cancelled: nothing failed.
        let all: Vec<_> = (0..3)
            .map(|i| failed(i, 0.0, 0.1, ErrorKind::Cancelled))
            .collect();
        let counts = FailureCounts::of(&summarize(&all, &SummaryOptions::default()));
        assert!(check_failures(&counts, None).is_ok());
        // One real failure among them is measured against the requests left to finish.
        records.push(failed(10, 0.0, 0.1, ErrorKind::Http(500)));
        let counts = FailureCounts::of(&summarize(&records, &SummaryOptions::default()));
        let error = check_failures(&counts, Some(0.1)).expect_err("1 of 5 = 20%");
        let text = error.to_string();
        assert!(
            text.contains("1 of 5") && !text.contains("cancelled ×"),
            "{text}"
        );
    }

    #[test]
    fn the_flag_takes_fractions_only() {
        assert_eq!(parse_failure_rate("0.05"), Ok(0.05));
        assert!(parse_failure_rate("5%").is_err());
        assert!(parse_failure_rate("1.5").is_err());
        assert!(parse_failure_rate("-0.1").is_err());
    }
}
