//! `pagoda-bench sweep`: the serve benchmark at several loads — a list of request rates or of
//! concurrency limits — reduced to a summary, a knee and plots; or, with `--find-max-rate`, a
//! bisection on the request rate for the highest one that meets the `--goodput` SLOs.
//!
//! Each load runs like `serve` with that `--request-rate` or `--max-concurrency` (the server
//! checked and the workload built again, then `--num-runs` runs); every other serve flag applies
//! to every load. Results always go to `--output-dir` (see [`super::sweep_output`]), so
//! `--save-result`, `--result-dir` and `--result-filename` are not used.
//!
//! Each load sends `--num-prompts` requests (1000 by default: 17 minutes at 1 req/s); give
//! `--duration SECONDS` for runs of equal length whatever the load.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{ensure, Context};
use clap::{ArgGroup, Args};
use pagoda_text::tokenizer::TextTokenizer;
use serde_json::Value;

use crate::cli::run_meta::{format_date, unix_now_s};
use crate::cli::serve::{load_tokenizer, prepare};
use crate::cli::serve_args::ServeArgs;
use crate::cli::serve_cmd::{combine_runs, render_spread, run_repeated, runs_aggregate};
use crate::cli::sweep_bisect::find_max_rate;
use crate::cli::sweep_loads::{load_args, ConcurrencyList, RateList};
use crate::cli::sweep_output::{
    knee_json, knee_text, save_point, summary_source, summary_table, write_summary,
};
use crate::sweep::{find_knee, summarize, KneeCriteria, SweepAxis, SweepPoint};

/// Run the serve benchmark at several loads (or search for the highest request rate that meets
/// the SLOs) and write a summary, the knee and plots.
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("loads")
        .required(true)
        .args(["request_rates", "concurrencies", "find_max_rate"])
))]
pub struct SweepArgs {
    #[command(flatten)]
    pub serve: ServeArgs,

    /// Request rates to sweep, comma-separated requests per second (distinct, > 0), e.g.
    /// 1,2,4,8: one open-loop run at each. Replaces --request-rate; exclusive with
    /// --concurrencies and --find-max-rate.
    #[arg(long, value_name = "RATE,...", conflicts_with = "request_rate")]
    pub request_rates: Option<RateList>,
    /// Concurrency limits to sweep, comma-separated (distinct, >= 1), e.g. 1,8,32: one run at
    /// each with at most that many requests in flight (--request-rate still applies; its
    /// default, inf, makes a closed loop). Replaces --max-concurrency.
    #[arg(long, value_name = "N,...", conflicts_with = "max_concurrency")]
    pub concurrencies: Option<ConcurrencyList>,
    /// Directory for the summary (CSV, JSON), each load's result, the knee and the plots.
    /// [default: sweep-<YYYYmmdd-HHMMSS> (UTC)]
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// Instead of a list of loads, bisect on the request rate for the highest rate whose run
    /// meets the --goodput SLOs (see --goodput-fraction); needs --goodput. A run in which the
    /// client fell behind its schedule is a failed measurement and stops the search with an
    /// error. Tip: --duration SECONDS gives every probe the same length.
    #[arg(long, requires = "goodput", conflicts_with = "request_rate")]
    pub find_max_rate: bool,
    /// --find-max-rate: a run meets the SLOs when at least this fraction of its requests met
    /// every SLO, i.e. goodput >= fraction × request throughput, failed requests counted as not
    /// good (so a server that drops requests cannot pass). In (0, 1].
    #[arg(long, default_value_t = 0.99, requires = "find_max_rate")]
    pub goodput_fraction: f64,
    /// --find-max-rate: the first rate tried (req/s); halved until a rate meets the SLOs.
    #[arg(long, default_value_t = 1.0, requires = "find_max_rate")]
    pub bisect_low: f64,
    /// --find-max-rate: the upper rate tried next (req/s); doubled while it meets the SLOs.
    #[arg(long, default_value_t = 16.0, requires = "find_max_rate")]
    pub bisect_high: f64,
    /// --find-max-rate: stop when the lowest failing rate is within this fraction above the
    /// highest passing one (relative: 0.05 = 5%).
    #[arg(long, default_value_t = 0.05, requires = "find_max_rate")]
    pub bisect_tolerance: f64,
    /// --find-max-rate: at most this many runs (probes) in all, bracket search included.
    #[arg(long, default_value_t = 10, requires = "find_max_rate")]
    pub bisect_max_runs: usize,
}

impl SweepArgs {
    /// The loads of a list sweep; `None` with --find-max-rate.
    pub fn axis(&self) -> Option<SweepAxis> {
        match (&self.request_rates, &self.concurrencies) {
            (Some(rates), _) => Some(SweepAxis::RequestRate(rates.0.clone())),
            (None, Some(levels)) => Some(SweepAxis::Concurrency(levels.0.clone())),
            (None, None) => None,
        }
    }

    /// `--output-dir`, else `sweep-<date>` for a sweep starting at `start_unix_s`.
    pub fn output_dir(&self, start_unix_s: f64) -> PathBuf {
        self.output_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("sweep-{}", format_date(start_unix_s))))
    }

    /// Checks what clap cannot: the ranges of the bisection flags.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !self.find_max_rate {
            return Ok(());
        }
        let fraction = self.goodput_fraction;
        ensure!(
            fraction > 0.0 && fraction <= 1.0,
            "--goodput-fraction must be in (0, 1], got {fraction}"
        );
        let (low, high) = (self.bisect_low, self.bisect_high);
        ensure!(
            low.is_finite() && high.is_finite() && low > 0.0 && high > low,
            "need finite rates 0 < --bisect-low < --bisect-high, got {low} and {high}"
        );
        ensure!(
            self.bisect_tolerance.is_finite() && self.bisect_tolerance > 0.0,
            "--bisect-tolerance must be > 0, got {}",
            self.bisect_tolerance
        );
        ensure!(
            self.bisect_max_runs >= 1,
            "--bisect-max-runs must be at least 1"
        );
        Ok(())
    }
}

/// `sweep`: loads the tokenizer once, then measures each load against the server.
pub async fn execute(args: SweepArgs) -> anyhow::Result<()> {
    args.validate()?;
    let tokenizer_arg = args.serve.tokenizer.clone();
    let (tokenizer, tokenizer_path) =
        tokio::task::spawn_blocking(move || load_tokenizer(tokenizer_arg.as_deref())).await??;
    let tokenizer_id = tokenizer_path.display().to_string();
    let measure =
        |serve: ServeArgs| measure_serve(serve, Arc::clone(&tokenizer), tokenizer_id.clone());
    execute_with(args, measure).await
}

/// One load measured like `serve`: each of its runs' result JSON.
async fn measure_serve(
    serve: ServeArgs,
    tokenizer: Arc<TextTokenizer>,
    tokenizer_id: String,
) -> anyhow::Result<Vec<Value>> {
    let prepared = prepare(&serve, tokenizer).await?;
    run_repeated(&serve, &prepared, &tokenizer_id).await
}

/// `sweep` with `measure(serve_args)` producing each load's run results (the server in
/// [`execute`]; anything in tests).
pub async fn execute_with<F, Fut>(args: SweepArgs, measure: F) -> anyhow::Result<()>
where
    F: FnMut(ServeArgs) -> Fut,
    Fut: Future<Output = anyhow::Result<Vec<Value>>>,
{
    args.validate()?;
    if args.serve.save_result || args.serve.result_filename.is_some() {
        eprintln!("note: sweep saves every result into --output-dir; --save-result and --result-filename are not used");
    }
    let dir = args.output_dir(unix_now_s());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    match args.axis() {
        Some(axis) => run_sweep(&args, &axis, &dir, measure).await,
        None => find_max_rate(&args, &dir, measure).await,
    }
}

async fn run_sweep<F, Fut>(
    args: &SweepArgs,
    axis: &SweepAxis,
    dir: &Path,
    mut measure: F,
) -> anyhow::Result<()>
where
    F: FnMut(ServeArgs) -> Fut,
    Fut: Future<Output = anyhow::Result<Vec<Value>>>,
{
    let mut points = Vec::new();
    for (load, serve) in load_args(&args.serve, axis) {
        eprintln!("sweep: {} = {load}", axis.key());
        let runs = measure(serve)
            .await
            .with_context(|| format!("the run at {} = {load} failed", axis.key()))?;
        warn_if_fell_behind(&runs, axis.key(), load);
        let result = combine_runs(&runs);
        if let Some(aggregate) = runs_aggregate(&result) {
            println!("{}", render_spread(aggregate));
        }
        save_point(dir, axis.key(), load, &result)?;
        points.push(SweepPoint {
            load,
            result: summary_source(&result),
        });
    }
    let summary = summarize(axis, &points);
    let criteria = KneeCriteria::default();
    let knee = find_knee(&summary.rows, &criteria);
    println!("{}", summary_table(&summary));
    println!("{}", knee_text(knee.as_ref(), summary.load_key, &criteria));
    write_summary(dir, &summary, knee_json(knee.as_ref(), &criteria))
}

/// A list sweep keeps going when the client fell behind (the point is still data), but says so.
fn warn_if_fell_behind(runs: &[Value], axis_key: &str, load: f64) {
    for run in runs {
        if run.pointer("/pagoda/summary/integrity/fell_behind") == Some(&Value::Bool(true)) {
            eprintln!(
                "warning: at {axis_key} = {load} the client fell behind its schedule: this \
                 point measures the client, not only the server (see its result's \
                 pagoda.summary.integrity)"
            );
        }
    }
}

#[cfg(test)]
mod tests;
