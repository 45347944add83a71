//! The tables at the top of the page: the runs, their summary, failed requests by kind, and
//! the comparison against the first result.

use serde_json::Value;

use super::figure::{escape, note, number, section, table};
use super::input::ReportResult;
use crate::analysis::compare::{compare_results, metric, Better, Comparison};

/// Rows of the summary table: result key and what the page calls it.
const SUMMARY_ROWS: [(&str, &str); 21] = [
    ("completed", "Completed requests"),
    ("failed", "Failed requests"),
    ("duration", "Duration (s)"),
    ("request_throughput", "Request throughput (req/s)"),
    ("request_goodput", "Goodput (req/s)"),
    ("output_throughput", "Output throughput (tok/s)"),
    ("total_token_throughput", "Total token throughput (tok/s)"),
    ("max_output_tokens_per_s", "Peak output throughput (tok/s)"),
    ("max_concurrent_requests", "Peak requests in flight"),
    ("mean_ttft_ms", "Mean TTFT (ms)"),
    ("median_ttft_ms", "Median TTFT (ms)"),
    ("p99_ttft_ms", "P99 TTFT (ms)"),
    ("mean_tpot_ms", "Mean TPOT (ms)"),
    ("median_tpot_ms", "Median TPOT (ms)"),
    ("p99_tpot_ms", "P99 TPOT (ms)"),
    ("mean_itl_ms", "Mean ITL (ms)"),
    ("median_itl_ms", "Median ITL (ms)"),
    ("p99_itl_ms", "P99 ITL (ms)"),
    ("mean_e2el_ms", "Mean E2EL (ms)"),
    ("median_e2el_ms", "Median E2EL (ms)"),
    ("p99_e2el_ms", "P99 E2EL (ms)"),
];

fn text_at(result: &Value, pointer: &str) -> String {
    match result.pointer(pointer) {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

fn header(results: &[&ReportResult], first: &str) -> Vec<String> {
    std::iter::once(first.to_string())
        .chain(results.iter().map(|r| r.label.clone()))
        .collect()
}

/// Who ran what against which server, one row per result.
pub fn runs_table(results: &[&ReportResult]) -> String {
    let columns = [
        ("Model", "/model_id"),
        ("Label", "/label"),
        ("Backend", "/backend"),
        ("Server", "/pagoda/run/base_url"),
        ("Date", "/date"),
        ("Request rate (req/s)", "/request_rate"),
        ("Max concurrency", "/max_concurrency"),
        ("Prompts", "/num_prompts"),
    ];
    let head: Vec<String> = std::iter::once("Result".to_string())
        .chain(columns.iter().map(|(name, _)| name.to_string()))
        .collect();
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            std::iter::once(r.label.clone())
                .chain(columns.iter().map(|(_, key)| text_at(&r.result, key)))
                .collect()
        })
        .collect();
    table(&head, &rows)
}

/// vLLM's headline numbers, one column per result; rows no result has are left out.
pub fn summary_section(results: &[&ReportResult]) -> String {
    let rows: Vec<Vec<String>> = SUMMARY_ROWS
        .iter()
        .filter(|(key, _)| results.iter().any(|r| metric(&r.result, key).is_some()))
        .map(|(key, name)| {
            std::iter::once(name.to_string())
                .chain(results.iter().map(|r| number(metric(&r.result, key))))
                .collect()
        })
        .collect();
    let body = if rows.is_empty() {
        note("No result has vLLM's summary keys.")
    } else {
        table(&header(results, "Metric"), &rows)
    };
    section(
        "summary",
        "Summary",
        &format!("{}{body}", runs_table(results)),
    )
}

/// `(label, count)` of each error kind in `pagoda.summary.errors_by_kind`.
fn errors_by_kind(result: &Value) -> Vec<(String, f64)> {
    let Some(kinds) = result
        .pointer("/pagoda/summary/errors_by_kind")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    kinds
        .iter()
        .filter_map(|kind| {
            let label = kind.get("label")?.as_str()?.to_string();
            Some((label, kind.get("count")?.as_f64()?))
        })
        .collect()
}

/// Failed requests by kind, one column per result.
pub fn errors_section(results: &[&ReportResult]) -> String {
    let per_result: Vec<Vec<(String, f64)>> =
        results.iter().map(|r| errors_by_kind(&r.result)).collect();
    let mut labels: Vec<String> = per_result
        .iter()
        .flatten()
        .map(|(l, _)| l.clone())
        .collect();
    labels.sort();
    labels.dedup();
    let num_failed: f64 = results
        .iter()
        .filter_map(|r| metric(&r.result, "failed"))
        .sum();
    let body = if labels.is_empty() && num_failed == 0.0 {
        note("No request failed.")
    } else if labels.is_empty() {
        note("Requests failed, but the results do not say why (no pagoda.summary.errors_by_kind).")
    } else {
        let rows: Vec<Vec<String>> = labels
            .iter()
            .map(|label| {
                std::iter::once(label.clone())
                    .chain(per_result.iter().map(|kinds| {
                        let count = kinds.iter().find(|(l, _)| l == label).map(|(_, c)| *c);
                        number(Some(count.unwrap_or(0.0)))
                    }))
                    .collect()
            })
            .collect();
        format!(
            "{}{}",
            note(
                "http_NNN: the server answered HTTP status NNN; timeout: the client's \
                 --request-timeout; connection: the connection could not be made or broke (a \
                 disconnect); stream: the stream ended before a finish_reason or [DONE], or carried an error."
            ),
            table(&header(results, "Error kind"), &rows)
        )
    };
    section("errors", "Failed requests by kind", &body)
}

/// Every result after the first against the first, as `compare` does; regressions beyond
/// `threshold_pct` are highlighted. Empty for a single result.
pub fn comparison_section(results: &[&ReportResult], threshold_pct: f64) -> String {
    let labelled: Vec<(String, Value)> = results
        .iter()
        .map(|r| (r.label.clone(), r.result.clone()))
        .collect();
    let Ok(comparison) = compare_results(&labelled, threshold_pct) else {
        return String::new();
    };
    section(
        "comparison",
        "Comparison against the baseline",
        &comparison_tables(&comparison),
    )
}

fn comparison_tables(comparison: &Comparison) -> String {
    let mut out = note(&format!(
        "Baseline: {}. A metric is flagged when it is worse than the baseline by more than {}% \
         (throughputs lower, latencies higher).",
        comparison.baseline, comparison.regression_threshold_pct
    ));
    for run in &comparison.runs {
        out.push_str(&format!("<h3>{}</h3>\n<table>\n", escape(&run.label)));
        out.push_str("<tr><th class=\"text\">Metric</th><th>Baseline</th><th>Value</th><th>Delta</th><th>Delta %</th></tr>\n");
        for delta in &run.deltas {
            let improved = match delta.better {
                Better::Higher => delta.delta > 0.0,
                Better::Lower => delta.delta < 0.0,
            };
            let class = if delta.regression {
                "worse"
            } else if improved {
                "better"
            } else {
                ""
            };
            let row_class = if delta.regression {
                " class=\"regression\""
            } else {
                ""
            };
            let pct = delta
                .delta_pct
                .map_or("n/a".to_string(), |p| format!("{p:+.1}%"));
            out.push_str(&format!(
                "<tr{row_class}><td class=\"text\">{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{:+.2}</td><td class=\"{class}\">{pct}</td></tr>\n",
                escape(delta.key),
                number(Some(delta.baseline)),
                number(Some(delta.value)),
                delta.delta,
            ));
        }
        out.push_str("</table>\n");
    }
    out
}
