//! Runs `pagoda-bench serve` end to end: prints the report, saves the result file.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{json, Value};

use crate::analysis::compare::aggregate_runs;
use crate::analysis::scrape::report::{render_server_side, render_spec_decode};
use crate::cli::backend::{backend_name, resolve_endpoint};
use crate::cli::conversation_args::render_conversations;
use crate::cli::exit_status::check_result_failures;
use crate::cli::report_cmd::write_run_report;
use crate::cli::result_file::save_result;
use crate::cli::run_meta::{format_date, machine_info};
use crate::cli::serve::{load_tokenizer, prepare, run_once_with_server_view, Prepared};
use crate::cli::serve_args::ServeArgs;
use crate::cli::serve_plots::{write_dataset_stats, write_timeline_page};
use crate::cli::trace_replay;
use crate::record::unix_now_s;
use crate::record::RequestRecord;
use crate::record_csv::{write_csv, RunRecords};
use crate::report::render;
use crate::runner::RunOutcome;
use crate::stats::{parse_metadata, vllm_result_json, BenchSummary, RampUp, RunMetadata};

/// Where `merge` finds the raw records in a result file saved with `--save-detailed`.
pub const RECORDS_KEY: &str = "records";

/// The result's `backend`, as vLLM names it (`--backend` as given, else the endpoint's name).
fn backend(args: &ServeArgs) -> anyhow::Result<String> {
    let endpoint = resolve_endpoint(args.backend.as_deref(), args.endpoint)?;
    Ok(backend_name(args.backend.as_deref(), endpoint))
}

fn metadata(
    args: &ServeArgs,
    prepared: &Prepared,
    tokenizer_id: &str,
    start_unix_s: f64,
) -> anyhow::Result<RunMetadata> {
    Ok(RunMetadata {
        date: format_date(start_unix_s),
        backend: backend(args)?,
        label: args.label.clone(),
        base_url: args.base_url(),
        endpoint: prepared.run_config.request.endpoint.path().to_string(),
        model_id: prepared.model.clone(),
        tokenizer_id: Some(tokenizer_id.to_string()),
        dataset_name: Some(args.dataset_name.dataset().saved_as.to_string()),
        num_prompts: prepared.specs.len(),
        request_rate: prepared.options.target_request_rate,
        burstiness: args.burstiness,
        max_concurrency: args.max_concurrency,
        ramp_up: prepared.schedule.ramp_up().map(|r| RampUp {
            strategy: format!("{:?}", r.strategy).to_lowercase(),
            start_rps: r.start_rps,
            end_rps: r.end_rps,
        }),
        seed: args.seed,
        structured_output: args
            .structured_output
            .meta(&prepared.run_config.request.structured_output),
        lora: args.lora.meta(),
        command_line: std::env::args().collect(),
        server_metadata: parse_metadata(&args.metadata)?,
        machine: machine_info(),
        pagoda_bench_version: env!("CARGO_PKG_VERSION").to_string(),
        start_unix_s,
        num_clients: 1,
        request_id_prefix: prepared.run_config.request.request_id_prefix.clone(),
    })
}

/// The result JSON of one run; raw records under `pagoda.records` with `--save-detailed` (and
/// with `--html`, which draws them; [`drop_unsaved_records`] takes them out before saving).
/// `pagoda.interrupted`: Ctrl-C stopped the run's sending (the result holds what was sent).
pub const INTERRUPTED_KEY: &str = "interrupted";

fn result_json(
    args: &ServeArgs,
    summary: &BenchSummary,
    outcome: &RunOutcome,
    meta: &RunMetadata,
) -> anyhow::Result<Value> {
    let mut result = vllm_result_json(summary, &outcome.records, meta, args.save_detailed)?;
    if let (Some(probes), Some(top)) = (&outcome.probes, result.as_object_mut()) {
        // vLLM's keys.
        top.insert("probe_completed".into(), json!(probes.num_completed));
        top.insert("probe_failed".into(), json!(probes.num_failed));
        top.insert("probe_median_e2el_ms".into(), json!(probes.median_e2el_ms));
        top.insert("probe_p99_e2el_ms".into(), json!(probes.p99_e2el_ms));
        top.insert("probe_max_e2el_ms".into(), json!(probes.max_e2el_ms));
    }
    if let Some(pagoda) = result.get_mut("pagoda").and_then(Value::as_object_mut) {
        pagoda.insert("client".into(), serde_json::to_value(&outcome.client)?);
        if outcome.interrupted {
            pagoda.insert(INTERRUPTED_KEY.into(), Value::Bool(true));
        }
        if let Some(conversations) = &outcome.conversations {
            pagoda.insert("conversations".into(), serde_json::to_value(conversations)?);
        }
        if args.keeps_records() {
            pagoda.insert(RECORDS_KEY.into(), serde_json::to_value(&outcome.records)?);
        }
    }
    Ok(result)
}

fn result_path(args: &ServeArgs) -> PathBuf {
    let name = args.result_filename.clone().unwrap_or_else(|| {
        let concurrency = args
            .max_concurrency
            .map_or("inf".to_string(), |c| c.to_string());
        format!(
            "pagoda-bench-{}qps-concurrency{concurrency}-{}.json",
            args.request_rate,
            format_date(unix_now_s())
        )
    });
    args.result_dir.join(name)
}

/// The result JSON of one finished run of `prepared` (what `serve --save-result` writes for a
/// single run), started at `start_unix_s`.
pub fn run_result(
    args: &ServeArgs,
    prepared: &Prepared,
    tokenizer_id: &str,
    start_unix_s: f64,
    outcome: &RunOutcome,
    summary: &BenchSummary,
) -> anyhow::Result<Value> {
    let meta = metadata(args, prepared, tokenizer_id, start_unix_s)?;
    let mut result = result_json(args, summary, outcome, &meta)?;
    if let (Some(trace), Some(pagoda)) = (
        &prepared.trace,
        result.get_mut("pagoda").and_then(Value::as_object_mut),
    ) {
        pagoda.insert("trace".into(), serde_json::to_value(trace)?);
    }
    Ok(result)
}

/// Runs `prepared` `--num-runs` times (at least once), printing each run's report; returns
/// each run's result JSON in order.
pub async fn run_repeated(
    args: &ServeArgs,
    prepared: &Prepared,
    tokenizer_id: &str,
) -> anyhow::Result<Vec<Value>> {
    let num_runs = args.num_runs.max(1);
    let mut results = Vec::with_capacity(num_runs);
    let structured_output = &prepared.run_config.request.structured_output;
    if let Some(meta) = args.structured_output.meta(structured_output) {
        println!("{:<40} {}", "Structured output:", meta.describe());
    }
    if let Some(lora) = args.lora.meta() {
        let modules = lora.modules.join(", ");
        println!("{:<40} {modules} ({})", "LoRA adapters:", lora.assignment);
    }
    if let Some(trace) = &prepared.trace {
        println!("{:<40} {}", "Trace replay:", trace_replay::describe(trace));
    }
    for run_index in 0..num_runs {
        let start_unix_s = unix_now_s();
        let (outcome, summary, server_side) = run_once_with_server_view(prepared).await?;
        let title = if num_runs > 1 {
            format!(
                "Serving Benchmark Result (run {} of {num_runs})",
                run_index + 1
            )
        } else {
            "Serving Benchmark Result".to_string()
        };
        let spec_decode = server_side.as_ref().and_then(|s| s.spec_decode.as_ref());
        let spec_decode = spec_decode.map(render_spec_decode);
        println!("{}", render(&summary, &title, spec_decode.as_deref()));
        if let Some(conversations) = &outcome.conversations {
            println!("{}", render_conversations(conversations));
        }
        if let Some(probes) = &outcome.probes {
            println!("{}", probes.render());
        }
        let mut result = run_result(
            args,
            prepared,
            tokenizer_id,
            start_unix_s,
            &outcome,
            &summary,
        )?;
        if let Some(server_side) = &server_side {
            println!("{}", render_server_side(server_side));
            if let Some(pagoda) = result.get_mut("pagoda").and_then(Value::as_object_mut) {
                pagoda.insert("server_side".into(), serde_json::to_value(server_side)?);
            }
        }
        results.push(result);
        if outcome.interrupted {
            break;
        }
    }
    Ok(results)
}

/// The file `serve` saves for several runs: the last run's result, with the mean, spread and
/// coefficient of variation of all of them under `pagoda.runs` (`{"num_runs", "aggregate"}`)
/// when there is more than one. `Null` for no runs.
pub fn combine_runs(results: &[Value]) -> Value {
    let mut result = results.last().cloned().unwrap_or(Value::Null);
    if results.len() > 1 {
        let aggregate = aggregate_runs(results);
        if let Some(pagoda) = result.get_mut("pagoda").and_then(Value::as_object_mut) {
            pagoda.insert(
                "runs".into(),
                json!({"num_runs": results.len(), "aggregate": aggregate}),
            );
        }
    }
    result
}

/// The mean of the runs combined by [`combine_runs`], when there were several.
pub fn runs_aggregate(result: &Value) -> Option<&Value> {
    result.pointer("/pagoda/runs/aggregate")
}

/// `serve`: prepare once, run `--num-runs` times, report each run (and their spread), save.
pub async fn execute(args: ServeArgs) -> anyhow::Result<()> {
    if args.writes_result_dir() {
        // Before the run, so that a run is never lost for want of its directory.
        std::fs::create_dir_all(&args.result_dir)
            .with_context(|| format!("cannot create {}", args.result_dir.display()))?;
    }
    let tokenizer_arg = args.tokenizer.clone();
    let (tokenizer, tokenizer_path) =
        tokio::task::spawn_blocking(move || load_tokenizer(tokenizer_arg.as_deref())).await??;
    let prepared = prepare(&args, tokenizer).await?;
    let tokenizer_id = tokenizer_path.display().to_string();
    let results = run_repeated(&args, &prepared, &tokenizer_id).await?;
    if let Some(path) = &args.html {
        write_run_report(path, &results, args.label.as_deref())?;
    }
    if let Some(path) = &args.csv {
        write_records_csv(path, &results)?;
    }
    if args.plot_timeline {
        let path = result_path(&args).with_extension("timeline.html");
        write_timeline_page(&path, &run_records(&results)?, args.timeline_itl_thresholds)?;
    }
    if args.plot_dataset_stats {
        let path = result_path(&args).with_extension("dataset_stats.png");
        write_dataset_stats(&path, &run_records(&results)?)?;
    }
    let mut result = combine_runs(&results);
    drop_unsaved_records(&args, &mut result);
    if let Some(aggregate) = runs_aggregate(&result) {
        println!("{}", render_spread(aggregate));
    }
    if args.saves_result() {
        let path = result_path(&args);
        save_result(&path, &result, args.append_result)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("result saved to {}", path.display());
    }
    check_result_failures(&results, args.max_failure_rate)
}

/// Every run's per-request records (kept in the results by `ServeArgs::keeps_records`).
fn run_records(results: &[Value]) -> anyhow::Result<Vec<Vec<RequestRecord>>> {
    results
        .iter()
        .map(|result| {
            let records = result
                .pointer(&format!("/pagoda/{RECORDS_KEY}"))
                .cloned()
                .context("a result without its records")?;
            Ok(serde_json::from_value(records)?)
        })
        .collect()
}

/// `--csv`: every run's records, one row per request.
fn write_records_csv(path: &std::path::Path, results: &[Value]) -> anyhow::Result<()> {
    let mut runs = Vec::with_capacity(results.len());
    for result in results {
        let pagoda = result.get("pagoda").context("a result without `pagoda`")?;
        let start_unix_s = pagoda
            .pointer("/run/start_unix_s")
            .and_then(Value::as_f64)
            .context("a result without pagoda.run.start_unix_s")?;
        let records: Vec<RequestRecord> =
            serde_json::from_value(pagoda.get(RECORDS_KEY).cloned().unwrap_or_default())?;
        runs.push((start_unix_s, records));
    }
    let runs: Vec<RunRecords> = runs
        .iter()
        .map(|(start_unix_s, records)| RunRecords {
            start_unix_s: *start_unix_s,
            records,
        })
        .collect();
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    write_csv(std::io::BufWriter::new(file), &runs)
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("per-request CSV saved to {}", path.display());
    Ok(())
}

/// Takes out the records that only `--html` or `--csv` asked for, so that without `--save-detailed` the
/// saved result stays small.
pub fn drop_unsaved_records(args: &ServeArgs, result: &mut Value) {
    if !args.save_detailed {
        if let Some(pagoda) = result.get_mut("pagoda").and_then(Value::as_object_mut) {
            pagoda.remove(RECORDS_KEY);
        }
    }
}

/// The raw records and start time of a result saved with `--save-detailed`.
pub fn read_detailed(path: &std::path::Path) -> anyhow::Result<(f64, Vec<RequestRecord>, Value)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let result: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let pagoda = result
        .get("pagoda")
        .context("not a pagoda-bench result (no `pagoda` key)")?;
    let start = pagoda
        .pointer("/run/start_unix_s")
        .and_then(Value::as_f64)
        .context("the result has no pagoda.run.start_unix_s")?;
    let records = pagoda
        .get(RECORDS_KEY)
        .context("the result has no records: run `serve` with --save-detailed")?;
    let records: Vec<RequestRecord> = serde_json::from_value(records.clone())?;
    Ok((start, records, result))
}

/// Mean ± standard deviation (and CV) of the headline metrics over `--num-runs` runs.
pub fn render_spread(aggregate: &Value) -> String {
    const KEYS: [&str; 7] = [
        "request_throughput",
        "output_throughput",
        "mean_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "mean_itl_ms",
        "p99_itl_ms",
    ];
    let num_runs = aggregate
        .get("num_runs")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut out = format!("{:=^50}\n", format!(" Spread over {num_runs} runs "));
    for key in KEYS {
        let (Some(mean), Some(stddev)) = (
            aggregate.get(key).and_then(Value::as_f64),
            aggregate
                .pointer(&format!("/stddev/{key}"))
                .and_then(Value::as_f64),
        ) else {
            continue;
        };
        let cv = aggregate
            .pointer(&format!("/cv/{key}"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        out.push_str(&format!(
            "{key:<26} {mean:>10.2} ± {stddev:<8.2} (CV {:.1}%)\n",
            cv * 100.0
        ));
    }
    out
}
