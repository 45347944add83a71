//! `sweep --find-max-rate`: bisection on the request rate ([`crate::analysis::sweep::bisect_max_rate`])
//! for the highest rate whose run meets the `--goodput` SLOs.
//!
//! Verdict of one run ([`judge_run`]): it meets the SLOs when `num_good ≥ goodput_fraction ×
//! (completed + failed)` — goodput ≥ fraction × request throughput, with failed requests counted
//! as not good — and at least one request completed. A run in which the client fell behind its
//! schedule (`pagoda.summary.integrity.fell_behind`) measured the client, not the server: it is
//! an error, which stops the search. With `--num-runs N` a rate meets the SLOs only if all its
//! runs do.
//!
//! Writes `bisect.json` (the settings, every probe, the answer and why the search stopped), each
//! probe's result under `results/`, and the summary and plots of the probes by rate.

use std::cell::RefCell;
use std::future::Future;
use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::{json, Value};

use crate::analysis::sweep::{
    bisect_max_rate, summarize, BisectOutcome, BisectStop, SweepAxis, SweepPoint,
};
use crate::cli::serve_args::ServeArgs;
use crate::cli::serve_cmd::combine_runs;
use crate::cli::sweep_args::SweepArgs;
use crate::cli::sweep_loads::with_rate;
use crate::cli::sweep_output::{
    save_point, summary_source, summary_table, write_json, write_summary,
};

pub const BISECT_JSON: &str = "bisect.json";

/// What one run says about the SLOs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunVerdict {
    pub num_good: u64,
    /// Completed plus failed requests.
    pub num_requests: u64,
    /// `num_good / num_requests` (0 for no requests).
    pub good_fraction: f64,
    pub meets_slos: bool,
}

/// Judges one run's result JSON; see the module documentation. An error when the client fell
/// behind or the result lacks the keys (a run without `--goodput` has no `num_good`).
pub fn judge_run(result: &Value, goodput_fraction: f64) -> anyhow::Result<RunVerdict> {
    let integrity = result
        .pointer("/pagoda/summary/integrity")
        .context("the result has no pagoda.summary.integrity")?;
    if integrity.get("fell_behind").and_then(Value::as_bool) != Some(false) {
        let reasons: Vec<&str> = integrity
            .get("reasons")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        bail!(
            "the client fell behind its schedule ({}): a failed measurement, not a verdict on \
             the server; give the client more CPU (a machine of its own)",
            reasons.join("; ")
        );
    }
    let count = |pointer: &str| {
        result
            .pointer(pointer)
            .and_then(Value::as_u64)
            .with_context(|| format!("the result has no {pointer}"))
    };
    let num_good = count("/pagoda/summary/goodput/num_good")?;
    let num_completed = count("/completed")?;
    let num_requests = num_completed + count("/failed")?;
    let good_fraction = if num_requests == 0 {
        0.0
    } else {
        num_good as f64 / num_requests as f64
    };
    let meets_slos = num_completed > 0 && num_good as f64 >= goodput_fraction * num_requests as f64;
    Ok(RunVerdict {
        num_good,
        num_requests,
        good_fraction,
        meets_slos,
    })
}

/// One probe of the search, as saved in `bisect.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    pub rate: f64,
    pub meets_slos: bool,
    /// One verdict per run (`--num-runs`).
    pub runs: Vec<RunVerdict>,
    pub request_throughput: Option<f64>,
    pub request_goodput: Option<f64>,
    pub result_file: String,
}

/// Runs the search, saves and prints it; an error when a run failed (after saving).
pub async fn find_max_rate<F, Fut>(
    args: &SweepArgs,
    dir: &Path,
    mut measure: F,
) -> anyhow::Result<()>
where
    F: FnMut(ServeArgs) -> Fut,
    Fut: Future<Output = anyhow::Result<Vec<Value>>>,
{
    let probes: RefCell<Vec<(Probe, SweepPoint)>> = RefCell::new(Vec::new());
    let (probes_ref, fraction) = (&probes, args.goodput_fraction);
    let outcome = bisect_max_rate(
        args.bisect_low,
        args.bisect_high,
        args.bisect_tolerance,
        args.bisect_max_runs,
        |rate| {
            eprintln!("find-max-rate: request_rate = {rate}");
            let runs = measure(with_rate(&args.serve, rate));
            async move {
                let (probe, point) = probe(rate, runs.await?, dir, fraction)?;
                let meets_slos = probe.meets_slos;
                probes_ref.borrow_mut().push((probe, point));
                Ok(meets_slos)
            }
        },
    )
    .await;
    let (probes, points): (Vec<Probe>, Vec<SweepPoint>) = probes.into_inner().into_iter().unzip();
    let report = report_json(args, &outcome, &probes);
    write_json(&dir.join(BISECT_JSON), &report)?;
    println!("{}", report_text(args, &outcome, &probes));
    if !points.is_empty() {
        let axis = SweepAxis::RequestRate(points.iter().map(|p| p.load).collect());
        let summary = summarize(&axis, &points);
        println!("{}", summary_table(&summary));
        write_summary(dir, &summary, json!({"find_max_rate": report}))?;
    }
    eprintln!("search saved to {}", dir.join(BISECT_JSON).display());
    match outcome.stop {
        BisectStop::RunFailed { rate, message } => {
            bail!("the run at {rate} req/s failed: {message}")
        }
        BisectStop::InvalidInput { message } => bail!("{message}"),
        BisectStop::Converged | BisectStop::BudgetExhausted => Ok(()),
    }
}

/// Saves a probe's result, then judges its runs.
fn probe(
    rate: f64,
    runs: Vec<Value>,
    dir: &Path,
    fraction: f64,
) -> anyhow::Result<(Probe, SweepPoint)> {
    let result = combine_runs(&runs);
    let path = save_point(dir, "request_rate", rate, &result)?;
    let verdicts = runs
        .iter()
        .map(|run| judge_run(run, fraction))
        .collect::<anyhow::Result<Vec<RunVerdict>>>()?;
    let source = summary_source(&result);
    let probe = Probe {
        rate,
        meets_slos: !verdicts.is_empty() && verdicts.iter().all(|v| v.meets_slos),
        runs: verdicts,
        request_throughput: crate::analysis::compare::metric(&source, "request_throughput"),
        request_goodput: crate::analysis::compare::metric(&source, "request_goodput"),
        result_file: path.display().to_string(),
    };
    Ok((
        probe,
        SweepPoint {
            load: rate,
            result: source,
        },
    ))
}

fn report_json(args: &SweepArgs, outcome: &BisectOutcome, probes: &[Probe]) -> Value {
    json!({
        "slos": args.serve.goodput,
        "goodput_fraction": args.goodput_fraction,
        "bisect_low": args.bisect_low,
        "bisect_high": args.bisect_high,
        "bisect_tolerance": args.bisect_tolerance,
        "bisect_max_runs": args.bisect_max_runs,
        "max_rate": outcome.max_rate,
        "min_failing_rate": outcome.min_failing_rate,
        "stop": outcome.stop,
        "probes": probes,
    })
}

fn report_text(args: &SweepArgs, outcome: &BisectOutcome, probes: &[Probe]) -> String {
    let mut out = format!("{:=^60}\n", " Highest request rate meeting the SLOs ");
    out.push_str(&format!(
        "SLOs {}; a run meets them when >= {}% of its requests are good\n",
        args.serve.goodput.join(" "),
        100.0 * args.goodput_fraction
    ));
    out.push_str(&format!(
        "{:>14} {:>8} {:>10} {:>10}\n",
        "rate (req/s)", "verdict", "good", "req/s"
    ));
    for p in probes {
        let good = p
            .runs
            .iter()
            .map(|v| v.good_fraction)
            .fold(f64::INFINITY, f64::min);
        out.push_str(&format!(
            "{:>14.4} {:>8} {:>9.1}% {:>10}\n",
            p.rate,
            if p.meets_slos { "meets" } else { "misses" },
            100.0 * good,
            p.request_throughput
                .map_or("-".into(), |t| format!("{t:.2}")),
        ));
    }
    out.push_str(&match (outcome.max_rate, outcome.min_failing_rate) {
        (Some(pass), Some(fail)) => {
            format!("Highest passing rate: {pass:.4} req/s (lowest failing: {fail:.4} req/s)\n")
        }
        (Some(pass), None) => format!("Highest passing rate: {pass:.4} req/s (no rate failed)\n"),
        (None, _) => "No rate met the SLOs\n".to_string(),
    });
    out.push_str(&match &outcome.stop {
        BisectStop::Converged => format!("Converged within {}%", 100.0 * args.bisect_tolerance),
        BisectStop::BudgetExhausted => format!(
            "Stopped after {} runs (--bisect-max-runs) before converging",
            outcome.attempts.len()
        ),
        BisectStop::RunFailed { rate, message } => {
            format!("Stopped: the run at {rate} req/s failed: {message}")
        }
        BisectStop::InvalidInput { message } => format!("Nothing ran: {message}"),
    });
    out
}
