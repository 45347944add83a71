#![allow(clippy::unwrap_used)]

use super::*;

fn labelled(label: &str, value: Value) -> (String, Value) {
    (label.to_string(), value)
}

#[test]
fn deltas_are_direction_aware() {
    let base = json!({"output_throughput": 1000.0, "p99_ttft_ms": 100.0, "mean_tpot_ms": 10.0, "request_rate": "inf"});
    let run = json!({"output_throughput": 900.0, "p99_ttft_ms": 90.0, "mean_tpot_ms": 10.4});
    let cmp = compare_results(&[labelled("a.json", base), labelled("b.json", run)], 5.0).unwrap();
    let deltas = &cmp.runs[0].deltas;
    let keys: Vec<&str> = deltas.iter().map(|d| d.key).collect();
    assert_eq!(
        keys,
        vec!["output_throughput", "p99_ttft_ms", "mean_tpot_ms"]
    );
    let tput = &deltas[0];
    assert_eq!(
        (tput.delta, tput.delta_pct, tput.regression),
        (-100.0, Some(-10.0), true)
    );
    let tpot = &deltas[2];
    assert!((tpot.delta_pct.unwrap() - 4.0).abs() < 1e-9 && !tpot.regression);
    let ttft = &deltas[1];
    assert_eq!((ttft.delta_pct, ttft.regression), (Some(-10.0), false));
    assert!(cmp.has_regressions());
}

#[test]
fn latency_regression_past_threshold_and_zero_baseline() {
    let base = json!({"p99_itl_ms": 20.0, "request_goodput": 0.0});
    let run = json!({"p99_itl_ms": 23.0, "request_goodput": 1.0});
    let cmp = compare_results(
        &[labelled("a", base.clone()), labelled("b", run.clone())],
        10.0,
    )
    .unwrap();
    let itl = cmp.runs[0]
        .deltas
        .iter()
        .find(|d| d.key == "p99_itl_ms")
        .unwrap();
    assert!(itl.regression, "+15% latency over a 10% threshold");
    let goodput = cmp.runs[0]
        .deltas
        .iter()
        .find(|d| d.key == "request_goodput")
        .unwrap();
    assert_eq!((goodput.delta_pct, goodput.regression), (None, false));
    let lenient = compare_results(&[labelled("a", base), labelled("b", run)], 20.0).unwrap();
    assert!(!lenient.has_regressions());
}

#[test]
fn text_and_json_show_every_run() {
    let results = [
        labelled("base", json!({"request_throughput": 10.0})),
        labelled("r1", json!({"request_throughput": 11.0})),
        labelled("r2", json!({"request_throughput": 8.0})),
    ];
    let cmp = compare_results(&results, 5.0).unwrap();
    let text = cmp.to_text();
    assert!(text.contains("r1 vs base") && text.contains("r2 vs base"));
    assert!(text.contains("+10.0%") && text.contains("-20.0%"));
    assert_eq!(text.matches("REGRESSION").count(), 1);
    let json = cmp.to_json();
    assert_eq!(json["runs"][1]["deltas"][0]["regression"], true);
    assert_eq!(json["runs"][0]["deltas"][0]["better"], "higher");
}

#[test]
fn needs_two_results() {
    assert!(matches!(
        compare_results(&[], 5.0),
        Err(CompareError::TooFewResults(0))
    ));
    let one = [labelled("a", json!({}))];
    assert!(matches!(
        compare_results(&one, 5.0),
        Err(CompareError::TooFewResults(1))
    ));
}

#[test]
fn aggregate_gives_mean_stddev_cv() {
    let runs = [
        json!({"request_throughput": 10.0, "completed": 100, "model_id": "m", "request_rate": "inf", "ttfts": [1.0], "date": "d1"}),
        json!({"request_throughput": 12.0, "completed": 100, "model_id": "m", "request_rate": "inf", "ttfts": [2.0], "date": "d2"}),
        json!({"request_throughput": 14.0, "completed": 100, "model_id": "m", "request_rate": "inf", "ttfts": [3.0], "date": "d3"}),
    ];
    let agg = aggregate_runs(&runs);
    assert_eq!(agg["num_runs"], 3);
    assert_eq!(agg["request_throughput"], 12.0);
    assert_eq!(agg["stddev"]["request_throughput"], 2.0);
    assert!((agg["cv"]["request_throughput"].as_f64().unwrap() - 2.0 / 12.0).abs() < 1e-12);
    assert_eq!(
        (
            agg["min"]["request_throughput"].as_f64(),
            agg["max"]["request_throughput"].as_f64()
        ),
        (Some(10.0), Some(14.0))
    );
    assert_eq!(agg["completed"], 100.0);
    assert_eq!(agg["stddev"]["completed"], 0.0);
    assert_eq!(agg["model_id"], "m");
    assert_eq!(agg["request_rate"], "inf");
    assert!(agg.get("ttfts").is_none() && agg.get("date").is_none());
    // The aggregate reads like a single result.
    assert_eq!(metric(&agg, "request_throughput"), Some(12.0));
}

#[test]
fn aggregate_of_one_run_and_of_none() {
    let agg = aggregate_runs(&[json!({"mean_ttft_ms": 5.0, "request_goodput": 0.0})]);
    assert_eq!(agg["stddev"]["mean_ttft_ms"], 0.0);
    assert_eq!(agg["cv"]["mean_ttft_ms"], 0.0);
    assert!(agg["cv"]["request_goodput"].is_null());
    assert_eq!(aggregate_runs(&[]), json!({"num_runs": 0}));
}

#[test]
fn aggregate_drops_keys_missing_from_some_runs() {
    let agg = aggregate_runs(&[json!({"a": 1.0, "b": 2.0}), json!({"a": 3.0})]);
    assert_eq!(agg["a"], 2.0);
    assert!(agg.get("b").is_none() && agg["stddev"].get("b").is_none());
}

#[test]
fn metric_reads_numbers_and_inf() {
    let value = json!({"a": 3, "b": "inf", "c": "x", "d": true});
    assert_eq!(metric(&value, "a"), Some(3.0));
    assert_eq!(metric(&value, "b"), Some(f64::INFINITY));
    assert_eq!(
        (
            metric(&value, "c"),
            metric(&value, "d"),
            metric(&value, "z")
        ),
        (None, None, None)
    );
}

#[test]
fn read_result_rejects_non_objects() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"completed": 3}"#).unwrap();
    assert_eq!(read_result(&good).unwrap()["completed"], 3);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[1, 2]").unwrap();
    assert!(matches!(
        read_result(&bad),
        Err(CompareError::NotAResult { .. })
    ));
    assert!(matches!(
        read_result(&dir.path().join("none.json")),
        Err(CompareError::Read { .. })
    ));
}

#[test]
fn runs_with_and_without_a_schema_are_told_apart() {
    let schema = json!({"mode": "json_schema", "file": "s.json", "field": "response_format",
        "tool_choice": null});
    let results = [
        labelled(
            "free.json",
            json!({"mean_tpot_ms": 10.0, "pagoda": {"run": {"structured_output": null}}}),
        ),
        labelled(
            "schema.json",
            json!({"mean_tpot_ms": 11.0, "pagoda": {"run": {"structured_output": schema}}}),
        ),
    ];
    let cmp = compare_results(&results, 50.0).unwrap();
    assert_eq!(cmp.baseline_structured_output, None);
    assert_eq!(
        cmp.runs[0].structured_output.as_deref(),
        Some("json_schema (s.json, response_format)")
    );
    let text = cmp.to_text();
    assert!(
        text.contains(
            "structured output: json_schema (s.json, response_format) vs none (baseline)"
        ),
        "{text}"
    );
    let plain = [
        labelled("a", json!({"mean_tpot_ms": 1.0})),
        labelled("b", json!({"mean_tpot_ms": 1.0})),
    ];
    assert!(!compare_results(&plain, 5.0)
        .unwrap()
        .to_text()
        .contains("structured output"));
}
