//! `pagoda-bench sweep`: the serve benchmark at several loads — a list of request rates or of
//! concurrency limits, or rates it finds itself (`--auto-rates`, see [`super::sweep_auto`]) —
//! reduced to a summary, a knee and plots; or, with `--find-max-rate`, a
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
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use pagoda_text::tokenizer::TextTokenizer;
use serde_json::Value;

use crate::analysis::html::{parse_input, ReportOptions};
use crate::analysis::sweep::{find_knee, summarize, KneeCriteria, SweepAxis, SweepPoint};
use crate::cli::exit_status::{check_failures, FailureCounts};
use crate::cli::report_cmd::write_report;
use crate::cli::serve::{load_tokenizer, prepare};
use crate::cli::serve_args::ServeArgs;
use crate::cli::serve_cmd::{
    combine_runs, drop_unsaved_records, render_spread, run_repeated, runs_aggregate,
};
use crate::cli::sweep_args::SweepArgs;
use crate::cli::sweep_auto::auto_rate_axis;
use crate::cli::sweep_bisect::find_max_rate;
use crate::cli::sweep_loads::load_args;
use crate::cli::sweep_output::{
    knee_json, knee_text, save_point, summary_source, summary_table, write_summary,
};
use crate::record::unix_now_s;

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
    if args.serve.save_result || args.serve.append_result || args.serve.result_filename.is_some() {
        eprintln!("note: sweep saves every result into --output-dir; --save-result, --append-result and --result-filename are not used");
    }
    let dir = args.output_dir(unix_now_s());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    match (args.axis(), args.auto_rates) {
        (Some(axis), _) => run_sweep(&args, &axis, &dir, measure).await,
        (None, Some(num_rates)) => {
            let mut measure = measure;
            let axis = auto_rate_axis(&args.serve, num_rates, &dir, &mut measure).await?;
            run_sweep(&args, &axis, &dir, measure).await
        }
        (None, None) => {
            anyhow::ensure!(
                args.serve.html.is_none(),
                "--html is for list sweeps; with --find-max-rate run `pagoda-bench report` on \
                 the results it saves"
            );
            find_max_rate(&args, &dir, measure).await
        }
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
    let mut failures = Vec::new();
    let mut report_inputs = Vec::new();
    for (load, serve) in load_args(&args.serve, axis) {
        eprintln!("sweep: {} = {load}", axis.key());
        let runs = measure(serve)
            .await
            .with_context(|| format!("the run at {} = {load} failed", axis.key()))?;
        warn_if_fell_behind(&runs, axis.key(), load);
        let mut result = combine_runs(&runs);
        failures.extend(runs.iter().filter_map(FailureCounts::of_result));
        if let Some(aggregate) = runs_aggregate(&result) {
            println!("{}", render_spread(aggregate));
        }
        if args.serve.html.is_some() {
            let label = format!("{} = {load}", axis.key());
            report_inputs.push(parse_input(&label, result.clone())?);
            drop_unsaved_records(&args.serve, &mut result);
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
    write_summary(dir, &summary, knee_json(knee.as_ref(), &criteria))?;
    if let Some(path) = &args.serve.html {
        write_report(path, &report_inputs, &ReportOptions::default())?;
    }
    // After everything is written: a point where every request (or too many) failed fails the
    // sweep's exit status.
    failures
        .iter()
        .try_for_each(|counts| check_failures(counts, args.serve.max_failure_rate))
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
