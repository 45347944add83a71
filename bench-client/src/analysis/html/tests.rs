use serde_json::{json, Value};

use super::distributions::cdf_points;
use super::figure::step_points;
use super::input::{parse_input, ReportInput};
use super::over_time::{bin_width_s, throughput_points};
use super::page::{render_report, ReportOptions};
use super::server_series::preemption_points;
use super::timeline_sampling::timeline_rows;
use crate::analysis::scrape::GaugeSample;
use crate::record::{ErrorKind, RequestRecord};
use crate::stats::test_records::{failed, varied_run};
use crate::stats::{summarize, SummaryOptions};
use pagoda_e2e::html::external_references;

const HOSTILE: &str = "<script>alert(\"x\")</script> & 'friends'";

fn gauge(unix_s: f64, running: f64, preemptions: f64) -> Value {
    json!({"unix_s": unix_s, "num_requests_running": running, "num_requests_waiting": 1.0,
           "kv_cache_usage": 0.25, "num_preemptions": preemptions})
}

/// A result as `serve --save-result --save-detailed --scrape-metrics` writes it (the keys the
/// report reads), at `rate` req/s, with every optional section.
fn full_result(rate: f64, records: &[RequestRecord], model: &str) -> Value {
    let summary = summarize(records, &SummaryOptions::default());
    let scale = 1.0 + rate / 10.0;
    json!({
        "model_id": model, "backend": "openai-chat", "label": HOSTILE, "request_rate": rate,
        "max_concurrency": null, "num_prompts": records.len(), "date": "20250101-000000",
        "completed": summary.num_completed, "failed": summary.num_failed, "duration": summary.duration_s,
        "request_throughput": rate * 0.9, "output_throughput": 100.0 * rate.min(4.0),
        "mean_ttft_ms": 20.0 * scale, "median_ttft_ms": 18.0 * scale, "p99_ttft_ms": 50.0 * scale * scale,
        "p99_itl_ms": 9.0 * scale, "p99_e2el_ms": 900.0 * scale,
        "pagoda": {
            "run": {"start_unix_s": 1000.0, "base_url": "http://127.0.0.1:8000"},
            "summary": summary,
            "records": records,
            "server_side": {"metrics_url": "http://127.0.0.1:8000/metrics", "namespace": "pagoda",
                "window_s": 3.0, "num_scrapes": 3, "num_failed_scrapes": 0,
                "timeline": [gauge(999.5, 0.0, 2.0), gauge(1001.0, 4.0, 5.0), gauge(1002.5, 1.0, 1.0)]},
            "slices": {"slice_duration_s": 1.0, "slices": [
                {"index": 0, "start_s": 0.0, "end_s": 1.0, "num_requests": 5, "p99_ttft_ms": 30.0, "p99_itl_ms": 8.0},
                {"index": 1, "start_s": 1.0, "end_s": 2.0, "num_requests": 4, "p99_ttft_ms": 45.0, "p99_itl_ms": 9.5}]},
            "turns": [{"turn": 1, "num_requests": 4, "mean_ttft_ms": 20.0, "p99_ttft_ms": 30.0},
                      {"turn": 2, "num_requests": 4, "mean_ttft_ms": 12.0, "p99_ttft_ms": 21.0}],
        },
    })
}

fn input(label: &str, value: Value) -> ReportInput {
    parse_input(label, value).expect("a valid input")
}

fn two_loads() -> String {
    let records = varied_run(40);
    let inputs = [
        input("rate-2.json", full_result(2.0, &records, "m")),
        input("rate-8.json", full_result(8.0, &records, "m")),
    ];
    render_report(&inputs, &ReportOptions::default()).expect("a report")
}

#[test]
fn every_section_and_chart_is_present() {
    let html = two_loads();
    for id in [
        "summary",
        "errors",
        "comparison",
        "sweep",
        "distributions",
        "over-time",
        "timeline",
        "server",
        "slices-turns",
        "chart-cdf-ttft",
        "chart-cdf-tpot",
        "chart-cdf-itl",
        "chart-cdf-e2el",
        "chart-output-throughput",
        "chart-concurrency",
        "chart-timeline-0",
        "chart-timeline-1",
        "chart-server-requests-0",
        "chart-kv-cache-0",
        "chart-preemptions-1",
        "chart-sweep-0-throughput_vs_p99_latency",
        "chart-sweep-0-ttft_vs_load",
        "chart-sweep-0-itl_vs_load",
        "chart-slices-0",
        "chart-turns-1",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    // The errors of varied_run (503s and timeouts) are counted by kind.
    assert!(html.contains("<td class=\"text\">http_503</td>"));
    assert!(html.contains("<td class=\"text\">timeout</td>"));
    // Rate 8 has p99 TTFT 1.8² / 1.2² = 2.25× rate 2's while throughput only doubled for 4×
    // the load: the knee is at rate 2, marked on the charts.
    assert!(html.contains("Knee: request_rate = 2"), "knee missing");
    assert!(html.contains("knee (request_rate = 2)"));
    assert!(html.contains("class=\"regression\""), "p99 TTFT regressed");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
}

#[test]
fn strings_from_results_are_escaped() {
    let records = varied_run(5);
    let inputs = [input(HOSTILE, full_result(1.0, &records, HOSTILE))];
    let html = render_report(&inputs, &ReportOptions::default()).expect("a report");
    assert!(
        !html.to_ascii_lowercase().contains("<script"),
        "unescaped script"
    );
    assert!(html
        .contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &apos;friends&apos;"));
}

#[test]
fn the_page_references_nothing_external() {
    let html = two_loads();
    assert!(
        html.contains("http://127.0.0.1:8000"),
        "the server URL is shown as text"
    );
    let found = external_references(&html);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn without_records_the_per_request_charts_say_what_they_need() {
    let mut result = full_result(1.0, &varied_run(5), "m");
    if let Some(pagoda) = result.get_mut("pagoda").and_then(Value::as_object_mut) {
        pagoda.remove("records");
    }
    let html = render_report(&[input("a", result)], &ReportOptions::default()).expect("report");
    assert!(!html.contains("chart-cdf-ttft") && !html.contains("chart-timeline-0"));
    assert!(html.contains("--save-detailed"));
    // The summary and the server's series do not need records.
    assert!(html.contains("id=\"chart-kv-cache-0\"") && html.contains("Completed requests"));
    // A vLLM result: the summary only.
    let vllm = json!({"completed": 10, "output_throughput": 50.0, "mean_ttft_ms": 12.0});
    let html = render_report(&[input("v", vllm)], &ReportOptions::default()).expect("report");
    assert!(html.contains("Mean TTFT (ms)") && html.contains("--scrape-metrics"));
}

#[test]
fn same_loads_make_no_sweep_and_a_sweep_file_does() {
    let records = varied_run(10);
    let same = [
        input("a", full_result(2.0, &records, "m")),
        input("b", full_result(2.0, &records, "m")),
    ];
    let html = render_report(&same, &ReportOptions::default()).expect("report");
    assert!(!html.contains("id=\"sweep\"") && html.contains("id=\"comparison\""));
    let summary = json!({"axis": "max_concurrency", "rows": [
        {"max_concurrency": 1, "output_throughput": 100.0, "p99_ttft_ms": 10.0, "errors": 0},
        {"max_concurrency": 4, "output_throughput": 390.0, "p99_ttft_ms": 11.0, "errors": 0},
        {"max_concurrency": 16, "output_throughput": 420.0, "p99_ttft_ms": 80.0, "errors": 2}]});
    let html = render_report(&[input("summary.json", summary)], &ReportOptions::default())
        .expect("report");
    assert!(html.contains("id=\"chart-sweep-0-ttft_vs_load\""));
    assert!(html.contains("Knee: max_concurrency = 4"));
    assert!(
        !html.contains("id=\"distributions\""),
        "no result, no per-result sections"
    );
}

#[test]
fn bad_inputs_are_errors() {
    assert!(parse_input("x", json!([1, 2])).is_err());
    let bad_records = json!({"pagoda": {"records": [{"index": "one"}]}});
    let error = parse_input("x", bad_records)
        .expect_err("malformed records")
        .to_string();
    assert!(error.starts_with("x: pagoda.records"), "{error}");
    assert!(parse_input("s", json!({"axis": "tokens", "rows": []})).is_err());
    assert!(render_report(&[], &ReportOptions::default()).is_err());
}

#[test]
fn cdf_is_monotone_and_keeps_the_extremes() {
    assert_eq!(
        cdf_points(&[3.0, 1.0, 2.0]),
        vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]
    );
    let many: Vec<f64> = (0..10_000).map(|i| f64::from(i % 977)).collect();
    let points = cdf_points(&many);
    assert_eq!(points.len(), super::distributions::MAX_CDF_POINTS);
    assert_eq!(points[0].0, 0.0);
    assert_eq!(points.last(), Some(&(976.0, 1.0)));
    assert!(points
        .windows(2)
        .all(|p| p[0].0 <= p[1].0 && p[0].1 < p[1].1));
    assert!(cdf_points(&[]).is_empty());
}

#[test]
fn throughput_bins_hold_every_token() {
    assert_eq!(bin_width_s(3.0), 0.1);
    assert_eq!(bin_width_s(60.0), 1.0);
    assert_eq!(bin_width_s(250.0), 5.0);
    assert_eq!(bin_width_s(1000.0), 10.0);
    let records = varied_run(60);
    let bin_s = 0.5;
    let points = throughput_points(&records, bin_s);
    // Each bin is two points (its start and its end) at the same rate: rate × width summed
    // over bins is every token of the successful requests.
    let tokens: f64 = points.chunks(2).map(|pair| pair[0].1 * bin_s).sum();
    let expected: usize = records
        .iter()
        .filter(|r| r.is_success())
        .map(|r| r.output_tokens)
        .sum();
    assert!(
        (tokens - expected as f64).abs() < 1e-6,
        "{tokens} vs {expected}"
    );
}

#[test]
fn timeline_samples_every_kth_request_in_send_order() {
    let records = varied_run(1000);
    let (rows, stride) = timeline_rows(&records);
    assert_eq!((rows.len(), stride), (250, 4));
    assert!(rows
        .windows(2)
        .all(|r| r[0].target_send_s <= r[1].target_send_s));
    let few = vec![failed(0, 1.0, 2.0, ErrorKind::Connection)];
    assert_eq!(timeline_rows(&few).1, 1);
    let svg = super::timeline_chart::timeline_svg(&few, "t");
    assert!(svg.contains("fill=\"#CC0000\"") && svg.contains("failed (Connection)"));
}

#[test]
fn preemptions_are_increases_per_interval_and_survive_a_reset() {
    let sample = |unix_s: f64, n: Option<f64>| GaugeSample {
        unix_s,
        num_requests_running: None,
        num_requests_waiting: None,
        kv_cache_usage: None,
        num_preemptions: n,
    };
    let timeline = [
        sample(10.0, Some(2.0)),
        sample(11.0, None),
        sample(12.0, Some(5.0)),
        sample(13.0, Some(1.0)),
    ];
    assert_eq!(
        preemption_points(&timeline, 10.0),
        vec![(0.0, 3.0), (2.0, 3.0), (2.0, 1.0), (3.0, 1.0)]
    );
    assert_eq!(
        step_points(&[(0.0, 1.0), (2.0, 3.0)], 5.0),
        vec![(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (5.0, 3.0)]
    );
}

/// `--plot-timeline`: every gap between tokens is coloured by its length against the two
/// thresholds, runs of one colour drawn as one bar, and the page is self-contained.
#[test]
fn the_itl_timeline_colours_every_gap_by_its_length() {
    use super::itl_timeline_page::itl_timeline_page;
    use crate::stats::test_records::streamed;
    // Gaps of 10, 10, 30, 60 and 10 ms: green (two, merged), orange, red, green.
    let chunks_s = [0.100, 0.110, 0.120, 0.150, 0.210, 0.220];
    let records = [streamed(0, 0.0, 0.0, &chunks_s, 0.220, 6)];
    let page = itl_timeline_page(&[("the run".to_string(), &records[..])], [25.0, 50.0]);
    let bars_of = |color: &str| page.matches(&format!("fill=\"{color}\"/>")).count();
    // Each colour's legend swatch is one more rect of it.
    assert_eq!(bars_of("#109618"), 1 + 2, "green");
    assert_eq!(bars_of("#FF7F0E"), 1 + 1, "orange");
    assert_eq!(bars_of("#D62728"), 1 + 1, "red");
    assert!(
        page.contains("ITL &lt; 25 ms") || page.contains("ITL < 25 ms"),
        "legend"
    );
    assert!(page.contains("id=\"chart-itl-timeline-0\""));
    assert!(external_references(&page).is_empty());
    // The plain timeline draws decoding as one bar.
    let plain = super::timeline_chart::timeline_svg(&records, "t");
    assert!(!plain.contains("#109618"));
}
