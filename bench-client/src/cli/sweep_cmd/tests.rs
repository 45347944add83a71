#![allow(clippy::unwrap_used)]

use std::path::Path;

use clap::Parser;
use serde_json::json;

use super::*;
use crate::cli::sweep_bisect::{judge_run, BISECT_JSON};

#[derive(Debug, Parser)]
struct Wrapper {
    #[command(flatten)]
    args: SweepArgs,
}

fn parse(flags: &[&str]) -> Result<SweepArgs, clap::Error> {
    Wrapper::try_parse_from(std::iter::once("sweep").chain(flags.iter().copied())).map(|w| w.args)
}

fn in_dir(dir: &Path, flags: &[&str]) -> SweepArgs {
    let dir = dir.to_str().unwrap();
    parse(&[flags, &["--output-dir", dir]].concat()).unwrap()
}

/// A server that serves `capacity` req/s: past it throughput is flat, TTFT explodes and only
/// half the requests meet the SLOs. `fell_behind` marks the client as overloaded.
fn fake_result(load: f64, capacity: f64, fell_behind: bool) -> Value {
    let throughput = load.min(capacity);
    let ttft = if load <= capacity {
        50.0 + load
    } else {
        500.0 * (load - capacity + 1.0)
    };
    let num_good = if load <= capacity { 100 } else { 50 };
    json!({
        "completed": 100,
        "failed": 0,
        "request_throughput": throughput,
        "request_goodput": throughput * f64::from(num_good) / 100.0,
        "output_throughput": 100.0 * throughput,
        "median_ttft_ms": ttft,
        "p99_ttft_ms": 2.0 * ttft,
        "median_itl_ms": 10.0,
        "p99_itl_ms": 20.0,
        "pagoda": {"summary": {
            "integrity": {"fell_behind": fell_behind, "reasons": ["p99 client send lag 3 ms exceeds 1 ms"]},
            "goodput": {"num_good": num_good},
        }},
    })
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn exactly_one_kind_of_load_is_given() {
    assert!(
        parse(&[]).is_err(),
        "a load list or --find-max-rate is required"
    );
    assert!(parse(&["--request-rates", "1,2", "--concurrencies", "1,8"]).is_err());
    assert!(parse(&[
        "--request-rates",
        "1,2",
        "--find-max-rate",
        "--goodput",
        "ttft:500"
    ])
    .is_err());
    assert!(parse(&["--request-rates", "1,2", "--request-rate", "3"]).is_err());
    assert!(parse(&["--concurrencies", "1,8", "--max-concurrency", "3"]).is_err());
    assert!(parse(&["--request-rates", "1,0"]).is_err());
    let rates = parse(&["--request-rates", "1,2,4", "--max-concurrency", "64"]).unwrap();
    assert_eq!(
        rates.axis(),
        Some(SweepAxis::RequestRate(vec![1.0, 2.0, 4.0]))
    );
    let levels = parse(&["--concurrencies", "1,8,32", "--request-rate", "10"]).unwrap();
    assert_eq!(levels.axis(), Some(SweepAxis::Concurrency(vec![1, 8, 32])));
    assert!(levels.output_dir(0.0).ends_with("sweep-19700101-000000"));
}

#[test]
fn bisection_flags_need_find_max_rate_and_slos() {
    assert!(
        parse(&["--find-max-rate"]).is_err(),
        "--goodput is required"
    );
    assert!(parse(&["--request-rates", "1", "--bisect-low", "2"]).is_err());
    assert!(parse(&["--request-rates", "1", "--goodput-fraction", "0.9"]).is_err());
    let args = parse(&["--find-max-rate", "--goodput", "ttft:500", "tpot:50"]).unwrap();
    assert_eq!(args.axis(), None);
    assert_eq!(args.serve.goodput, vec!["ttft:500", "tpot:50"]);
    let defaults = (args.goodput_fraction, args.bisect_low, args.bisect_high);
    assert_eq!(defaults, (0.99, 1.0, 16.0));
    assert_eq!((args.bisect_tolerance, args.bisect_max_runs), (0.05, 10));
    args.validate().unwrap();
    for bad in [
        ["--goodput-fraction", "0"],
        ["--goodput-fraction", "1.5"],
        ["--bisect-low", "0"],
        ["--bisect-high", "0.5"],
        ["--bisect-tolerance", "0"],
        ["--bisect-max-runs", "0"],
    ] {
        let args =
            parse(&[&["--find-max-rate", "--goodput", "ttft:500"], &bad[..]].concat()).unwrap();
        assert!(args.validate().is_err(), "{bad:?}");
    }
}

#[test]
fn verdicts_count_failed_requests_and_reject_a_lagging_client() {
    let meets = judge_run(&fake_result(5.0, 10.0, false), 0.99).unwrap();
    assert!(meets.meets_slos && meets.good_fraction == 1.0);
    let misses = judge_run(&fake_result(20.0, 10.0, false), 0.99).unwrap();
    assert!(!misses.meets_slos && misses.good_fraction == 0.5);
    assert!(
        judge_run(&fake_result(20.0, 10.0, false), 0.5)
            .unwrap()
            .meets_slos
    );
    // 99 good of 99 completed, but one request failed: 99% of 100 still passes at 0.99 ...
    let mut one_failed = fake_result(5.0, 10.0, false);
    one_failed["completed"] = json!(99);
    one_failed["failed"] = json!(1);
    one_failed["pagoda"]["summary"]["goodput"]["num_good"] = json!(99);
    assert!(judge_run(&one_failed, 0.99).unwrap().meets_slos);
    // ... and fails at 1.0 although every completed request was good.
    assert!(!judge_run(&one_failed, 1.0).unwrap().meets_slos);
    let error = judge_run(&fake_result(5.0, 10.0, true), 0.99).unwrap_err();
    assert!(error.to_string().contains("fell behind"), "{error}");
    assert!(judge_run(&json!({"completed": 1}), 0.99).is_err());
}

#[tokio::test]
async fn a_rate_sweep_writes_summary_knee_results_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let args = in_dir(dir.path(), &["--request-rates", "1,2,4,8,16,32"]);
    let mut seen = Vec::new();
    let measure = |serve: ServeArgs| {
        seen.push(serve.request_rate.clone());
        let rate: f64 = serve.request_rate.parse().unwrap();
        async move { Ok(vec![fake_result(rate, 10.0, false)]) }
    };
    execute_with(args, measure).await.unwrap();
    assert_eq!(seen, vec!["1", "2", "4", "8", "16", "32"]);
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(csv.starts_with("request_rate,request_throughput,"), "{csv}");
    assert_eq!(csv.lines().count(), 7);
    let summary = read(&dir.path().join("summary.json"));
    assert_eq!(summary["rows"].as_array().unwrap().len(), 6);
    // 8 → 16 req/s: throughput 800 → 1000 tok/s (+25% for +100% load) while p99 TTFT explodes.
    assert_eq!(summary["knee"]["load"], 8.0);
    assert_eq!(summary["knee"]["next_load"], 16.0);
    let point = read(&dir.path().join("results/request_rate-4.json"));
    assert_eq!(point["request_throughput"], 4.0);
    for name in ["throughput_vs_p99_latency", "ttft_vs_load", "itl_vs_load"] {
        for ext in ["svg", "png"] {
            let path = dir.path().join(format!("plots/{name}.{ext}"));
            assert!(path.is_file(), "{}", path.display());
        }
    }
}

#[tokio::test]
async fn a_concurrency_sweep_summarises_repeated_runs_by_their_mean() {
    let dir = tempfile::tempdir().unwrap();
    let args = in_dir(dir.path(), &["--concurrencies", "1,4", "--num-runs", "2"]);
    let measure = |serve: ServeArgs| {
        let level = serve.max_concurrency.unwrap() as f64;
        async move {
            Ok(vec![
                fake_result(level, 10.0, false),
                fake_result(level + 1.0, 10.0, false),
            ])
        }
    };
    execute_with(args, measure).await.unwrap();
    let summary = read(&dir.path().join("summary.json"));
    assert_eq!(summary["axis"], "max_concurrency");
    assert_eq!(summary["rows"][1]["max_concurrency"], 4.0);
    assert_eq!(summary["rows"][1]["request_throughput"], 4.5);
    assert!(summary["knee"].is_null());
    let point = read(&dir.path().join("results/max_concurrency-4.json"));
    assert_eq!(point["pagoda"]["runs"]["num_runs"], 2);
}

#[tokio::test]
async fn find_max_rate_bisects_to_the_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--find-max-rate",
        "--goodput",
        "ttft:500",
        "--bisect-low",
        "1",
        "--bisect-high",
        "16",
        "--bisect-tolerance",
        "0.02",
        "--bisect-max-runs",
        "20",
    ];
    let args = in_dir(dir.path(), &flags);
    let measure = |serve: ServeArgs| {
        let rate: f64 = serve.request_rate.parse().unwrap();
        async move { Ok(vec![fake_result(rate, 7.3, false)]) }
    };
    execute_with(args, measure).await.unwrap();
    let report = read(&dir.path().join(BISECT_JSON));
    let (pass, fail) = (
        report["max_rate"].as_f64().unwrap(),
        report["min_failing_rate"].as_f64().unwrap(),
    );
    assert!(
        pass <= 7.3 && fail > 7.3 && fail - pass <= 0.02 * pass,
        "{pass} {fail}"
    );
    assert_eq!(report["stop"]["reason"], "converged");
    assert_eq!(report["slos"], json!(["ttft:500"]));
    let probes = report["probes"].as_array().unwrap();
    assert_eq!(
        (probes[0]["rate"].clone(), probes[0]["meets_slos"].clone()),
        (json!(1.0), json!(true))
    );
    assert!(dir
        .path()
        .join(probes[1]["result_file"].as_str().unwrap())
        .is_file());
    assert!(dir.path().join("summary.csv").is_file());
}

#[tokio::test]
async fn find_max_rate_stops_with_an_error_when_the_client_falls_behind() {
    let dir = tempfile::tempdir().unwrap();
    let args = in_dir(dir.path(), &["--find-max-rate", "--goodput", "ttft:500"]);
    let measure = |serve: ServeArgs| {
        let rate: f64 = serve.request_rate.parse().unwrap();
        async move { Ok(vec![fake_result(rate, 100.0, rate > 10.0)]) }
    };
    let error = execute_with(args, measure).await.unwrap_err();
    assert!(
        error.to_string().contains("at 16 req/s failed"),
        "{error:#}"
    );
    let report = read(&dir.path().join(BISECT_JSON));
    assert_eq!(report["stop"]["reason"], "run_failed");
    assert_eq!(report["max_rate"], 1.0);
    // The failed measurement is kept for inspection.
    assert!(dir.path().join("results/request_rate-16.json").is_file());
}

#[tokio::test]
async fn a_sweep_with_html_writes_one_report_of_every_load_and_saves_no_records() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("sweep.html");
    let args = in_dir(
        dir.path(),
        &[
            "--request-rates",
            "4,8,16",
            "--html",
            html.to_str().unwrap(),
        ],
    );
    let measure = |serve: ServeArgs| {
        let rate: f64 = serve.request_rate.parse().unwrap();
        async move {
            let mut result = fake_result(rate, 10.0, false);
            // What run_repeated hands over with --html: the load, the records in memory.
            result["request_rate"] = json!(rate);
            result["pagoda"]["records"] = json!([]);
            Ok(vec![result])
        }
    };
    execute_with(args, measure).await.unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    for load in ["request_rate = 4", "request_rate = 8", "request_rate = 16"] {
        assert!(page.contains(load), "{load} missing");
    }
    assert!(page.contains("id=\"chart-sweep-0-ttft_vs_load\""));
    assert!(page.contains("Knee: request_rate = 8"));
    let point = read(&dir.path().join("results/request_rate-8.json"));
    assert!(point.pointer("/pagoda/records").is_none(), "records saved");
    let error = execute_with(
        in_dir(
            dir.path(),
            &[
                "--find-max-rate",
                "--goodput",
                "ttft:100",
                "--html",
                "x.html",
            ],
        ),
        measure,
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().contains("--html is for list sweeps"),
        "{error}"
    );
}

#[test]
fn auto_rates_takes_no_other_load_and_at_least_two_rates() {
    assert!(parse(&["--auto-rates", "5", "--request-rates", "1,2"]).is_err());
    assert!(parse(&["--auto-rates", "5", "--request-rate", "2"]).is_err());
    let args = parse(&["--auto-rates", "5", "--max-concurrency", "16"]).unwrap();
    assert_eq!((args.axis(), args.auto_rates), (None, Some(5)));
    args.validate().unwrap();
    assert!(parse(&["--auto-rates", "1"]).unwrap().validate().is_err());
}

#[tokio::test]
async fn auto_rates_calibrate_then_sweep_evenly_between_the_two_throughputs() {
    let dir = tempfile::tempdir().unwrap();
    let args = in_dir(
        dir.path(),
        &["--auto-rates", "4", "--max-concurrency", "16"],
    );
    let mut seen = Vec::new();
    let measure = |serve: ServeArgs| {
        seen.push((serve.request_rate.clone(), serve.max_concurrency));
        // 1.5 req/s one at a time; at most 6 req/s however many are in flight.
        let capacity = 6.0;
        let result = match (serve.request_rate.as_str(), serve.max_concurrency) {
            ("inf", Some(1)) => fake_result(1.5, capacity, false),
            ("inf", _) => fake_result(100.0, capacity, false),
            (rate, _) => fake_result(rate.parse().unwrap(), capacity, false),
        };
        async move { Ok(vec![result]) }
    };
    execute_with(args, measure).await.unwrap();
    let rates: Vec<&str> = seen.iter().map(|(rate, _)| rate.as_str()).collect();
    assert_eq!(rates, ["inf", "inf", "1.5", "3", "4.5", "6"]);
    assert_eq!(seen[0].1, Some(1), "the serial calibration");
    assert!(
        seen[1..].iter().all(|(_, cap)| *cap == Some(16)),
        "the cap holds"
    );
    let serial = read(&dir.path().join("calibration/synchronous.json"));
    assert_eq!(serial["request_throughput"], 1.5);
    let saturated = read(&dir.path().join("calibration/throughput.json"));
    assert_eq!(saturated["request_throughput"], 6.0);
    let summary = read(&dir.path().join("summary.json"));
    assert_eq!(summary["axis"], "request_rate");
    assert_eq!(summary["rows"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn auto_rates_stop_when_concurrency_buys_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let args = in_dir(dir.path(), &["--auto-rates", "3"]);
    let measure = |_: ServeArgs| async { Ok(vec![fake_result(2.0, 2.0, false)]) };
    let error = execute_with(args, measure).await.unwrap_err();
    assert!(error.to_string().contains("no range of rates"), "{error}");
}
