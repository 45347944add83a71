//! `pagoda-bench merge`: the raw records of several client processes → exact global statistics.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cli::serve_cmd::read_detailed;
use crate::report::render;
use crate::stats::{
    merge, parse_goodput, parse_percentile_metrics, parse_percentiles, summarize, vllm_result_json,
    RunMetadata, SummaryOptions,
};

/// Combine the results of a distributed run (each saved with `serve --save-detailed`).
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Result files of the client processes (each with a distinct --client-id).
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Percentiles to report, e.g. 50,90,99.
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    /// Metrics to report percentiles for.
    #[arg(long, default_value = "ttft,tpot,itl")]
    pub percentile_metrics: String,
    /// Goodput SLOs, e.g. ttft:500 tpot:50.
    #[arg(long, num_args = 1..)]
    pub goodput: Vec<String>,
    /// Write the merged result JSON here.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

pub fn execute(args: MergeArgs) -> anyhow::Result<()> {
    let mut parts = Vec::new();
    let mut first_result = None;
    // Closed-loop clients: the run's concurrency limit is theirs added up (slot waits are then
    // not counted as client lag).
    let mut max_concurrency = Some(0usize);
    for path in &args.files {
        let (start, records, result) =
            read_detailed(path).with_context(|| format!("{}", path.display()))?;
        let limit = result
            .get("max_concurrency")
            .and_then(serde_json::Value::as_u64);
        max_concurrency = max_concurrency.zip(limit).map(|(sum, l)| sum + l as usize);
        first_result.get_or_insert(result);
        parts.push((start, records));
    }
    let merged = merge(&parts)?;
    let options = SummaryOptions {
        percentiles: parse_percentiles(&args.metric_percentiles)?,
        percentile_metrics: parse_percentile_metrics(&args.percentile_metrics)?,
        goodput: parse_goodput(&args.goodput)?,
        max_concurrency,
        ..SummaryOptions::default()
    };
    let summary = summarize(&merged.records, &options);
    let title = format!("Merged result of {} clients", args.files.len());
    println!("{}", render(&summary, &title, None));
    if let Some(output) = &args.output {
        let mut meta: RunMetadata = first_result
            .as_ref()
            .and_then(|r| r.pointer("/pagoda/run"))
            .cloned()
            .map(serde_json::from_value)
            .transpose()?
            .context("the first file has no pagoda.run metadata")?;
        meta.start_unix_s = merged.start_unix_s;
        meta.num_clients = args.files.len();
        meta.num_prompts = merged.records.len();
        meta.max_concurrency = max_concurrency;
        let result = vllm_result_json(&summary, &merged.records, &meta, true)?;
        std::fs::write(output, serde_json::to_string_pretty(&result)?)
            .with_context(|| format!("cannot write {}", output.display()))?;
        eprintln!("merged result saved to {}", output.display());
    }
    Ok(())
}
