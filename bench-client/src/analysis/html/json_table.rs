//! Optional parts of a result rendered generically, so that new keys show without a change
//! here: `pagoda.slices` (`{"slice_duration_s", "slices": [{…}]}`: the run cut into time
//! slices) and `pagoda.turns` (`[{"turn", …}]`: multi-turn conversations by turn), each as a
//! table of every key and a chart of its latencies.

use serde_json::Value;

use super::figure::{dotted_figure, number, table};
use super::input::ReportResult;
use crate::analysis::plot::{Chart, Series};

/// A table of a list of objects: one column per key (in order of first appearance), one row per
/// object; numbers with two decimals, other values as JSON.
pub fn objects_table(objects: &[Value]) -> String {
    let mut columns: Vec<String> = Vec::new();
    for object in objects.iter().filter_map(Value::as_object) {
        for key in object.keys() {
            if !columns.contains(key) {
                columns.push(key.clone());
            }
        }
    }
    let rows: Vec<Vec<String>> = objects
        .iter()
        .map(|object| {
            columns
                .iter()
                .map(|key| match object.get(key) {
                    None | Some(Value::Null) => "-".to_string(),
                    Some(Value::Number(n)) => number(n.as_f64()),
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                })
                .collect()
        })
        .collect();
    table(&columns, &rows)
}

/// Series `(x_key, y_key)` for each `y_keys` present in some object.
fn series_of(objects: &[Value], x_key: &str, y_keys: &[(&str, &str)]) -> Vec<Series> {
    y_keys
        .iter()
        .map(|(key, label)| Series {
            label: label.to_string(),
            points: objects
                .iter()
                .filter_map(|o| Some((o.get(x_key)?.as_f64()?, o.get(*key)?.as_f64()?)))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// The slices table and chart of one result; empty without `pagoda.slices`.
pub fn slices_html(result: &ReportResult, index: usize) -> String {
    let Some(slices) = result
        .result
        .pointer("/pagoda/slices/slices")
        .and_then(Value::as_array)
    else {
        return String::new();
    };
    let duration = result
        .result
        .pointer("/pagoda/slices/slice_duration_s")
        .and_then(Value::as_f64);
    let chart = Chart {
        title: "Tail latency per time slice".into(),
        x_label: "Slice start (s since the run's start)".into(),
        y_label: "Latency (ms)".into(),
        series: series_of(
            slices,
            "start_s",
            &[("p99_ttft_ms", "p99 TTFT"), ("p99_itl_ms", "p99 ITL")],
        ),
    };
    format!(
        "<h3>{}: time slices of {} s</h3>\n{}{}",
        super::figure::escape(&result.label),
        number(duration),
        dotted_figure(&format!("chart-slices-{index}"), &chart, ""),
        objects_table(slices)
    )
}

/// The turns table and chart of one result; empty without `pagoda.turns`.
pub fn turns_html(result: &ReportResult, index: usize) -> String {
    let Some(turns) = result
        .result
        .pointer("/pagoda/turns")
        .and_then(Value::as_array)
    else {
        return String::new();
    };
    let chart = Chart {
        title: "TTFT by conversation turn".into(),
        x_label: "Turn".into(),
        y_label: "TTFT (ms)".into(),
        series: series_of(
            turns,
            "turn",
            &[
                ("mean_ttft_ms", "mean TTFT"),
                ("median_ttft_ms", "median TTFT"),
                ("p99_ttft_ms", "p99 TTFT"),
            ],
        ),
    };
    format!(
        "<h3>{}: by conversation turn</h3>\n{}{}",
        super::figure::escape(&result.label),
        dotted_figure(&format!("chart-turns-{index}"), &chart, ""),
        objects_table(turns)
    )
}
