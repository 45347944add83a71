//! `pagoda.slices` in the result file: one flat object per time slice, with vLLM's key names
//! (`mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms` …) so that a slice reads like a small run.

use serde_json::{json, Map, Value};

use super::percentile::percentile_key;
use super::percentile::MetricStats;
use super::slices::TimeSlices;
use super::steady_state::WindowSummary;

/// `{"slice_duration_s", "slices": [...]}`: every slice's counts, throughputs and, for every
/// metric, `mean_`, `median_`, `std_` and each percentile (`null` without samples).
pub fn slices_json(slices: &TimeSlices) -> Value {
    let rows: Vec<Value> = slices
        .slices
        .iter()
        .enumerate()
        .map(|(index, slice)| slice_json(index, slice))
        .collect();
    json!({"slice_duration_s": slices.slice_duration_s, "slices": rows})
}

fn slice_json(index: usize, slice: &WindowSummary) -> Value {
    let mut row = Map::new();
    let counts = json!({
        "index": index,
        "start_s": slice.start_s,
        "end_s": slice.end_s,
        "duration_s": slice.duration_s,
        "num_requests": slice.num_sent,
        "num_completed": slice.num_completed,
        "num_failed": slice.num_failed,
        "total_input_tokens": slice.total_input_tokens,
        "total_output_tokens": slice.total_output_tokens,
        "request_throughput": slice.request_throughput,
        "output_throughput": slice.output_throughput,
        "total_token_throughput": slice.total_token_throughput,
        "request_goodput": slice.request_goodput,
        "mean_concurrency": slice.mean_concurrency,
    });
    if let Value::Object(counts) = counts {
        row.extend(counts);
    }
    for summary in &slice.metrics {
        insert_metric(&mut row, summary.metric.name(), summary.stats.as_ref());
    }
    Value::Object(row)
}

fn insert_metric(row: &mut Map<String, Value>, name: &str, stats: Option<&MetricStats>) {
    let value = |f: &dyn Fn(&MetricStats) -> f64| stats.map_or(Value::Null, |s| json!(f(s)));
    row.insert(format!("mean_{name}_ms"), value(&|s| s.mean_ms));
    row.insert(format!("median_{name}_ms"), value(&|s| s.median_ms));
    row.insert(format!("std_{name}_ms"), value(&|s| s.std_ms));
    for p in stats.iter().flat_map(|s| &s.percentiles_ms) {
        row.insert(percentile_key(p.percentile, name), json!(p.value_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::varied_run;
    use crate::stats::{time_slices, SummaryOptions};

    #[test]
    fn every_slice_has_counts_and_vllm_named_metrics() {
        let records = varied_run(300);
        let options = SummaryOptions {
            percentiles: vec![50.0, 99.0],
            ..SummaryOptions::default()
        };
        let slices = time_slices(&records, 5.0, &options).expect("slices");
        let value = slices_json(&slices);
        assert_eq!(value["slice_duration_s"], 5.0);
        let rows = value["slices"].as_array().expect("rows");
        assert_eq!(rows.len(), slices.slices.len());
        let total: u64 = rows
            .iter()
            .map(|r| r["num_requests"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(total as usize, records.len());
        for (index, row) in rows.iter().enumerate() {
            assert_eq!(row["index"], index);
            let expected = slices.slices[index].metrics[0]
                .stats
                .as_ref()
                .map(|s| s.mean_ms);
            assert_eq!(row["mean_ttft_ms"].as_f64(), expected);
            if expected.is_some() {
                assert!(row["p99_ttft_ms"].is_number() && row["p50_e2el_ms"].is_number());
            }
        }
    }
}
