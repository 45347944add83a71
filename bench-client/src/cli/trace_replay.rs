//! `serve --dataset-name trace`: the trace's requests and arrival times in place of a dataset and
//! a schedule.

use std::sync::Arc;

use anyhow::{bail, Context};
use pagoda_text::tokenizer::TextTokenizer;

use crate::cli::serve_args::{DatasetName, ServeArgs};
use crate::dataset::trace::{build_trace, TraceSummary, TraceWorkload};
use crate::lora::LoraPlan;
use crate::schedule::{RequestRate, ScheduleConfig};

/// The replay of `--dataset-path` when the dataset is a trace; `None` for other datasets (after
/// checking that no trace flag was given for them).
pub async fn trace_workload(
    args: &ServeArgs,
    tokenizer: &Arc<TextTokenizer>,
    schedule: &ScheduleConfig,
    lora: Option<&LoraPlan>,
) -> anyhow::Result<Option<TraceWorkload>> {
    let config = args
        .trace
        .config(args.dataset_path.as_deref(), args.duration)?;
    let config = match (args.dataset_name, config) {
        (DatasetName::Trace, Some(config)) => config,
        (DatasetName::Trace, None) => bail!("--dataset-name trace needs --trace-format"),
        (_, Some(_)) => bail!("--trace-format replays a trace: give --dataset-name trace"),
        (_, None) => return Ok(None),
    };
    // The command line refuses these flags with a trace; a sweep sets the rate itself.
    if schedule.rate() != RequestRate::Infinite || schedule.ramp_up().is_some() {
        bail!("a trace brings its own arrival times: no request rate or ramp-up (use --trace-time-scale to replay faster or slower)");
    }
    let (tokenizer, seed) = (Arc::clone(tokenizer), args.seed);
    let path = config.path.display().to_string();
    let mut workload = tokio::task::spawn_blocking(move || build_trace(&config, &tokenizer, seed))
        .await?
        .with_context(|| format!("cannot replay the trace {path}"))?;
    if let Some(lora) = lora {
        lora.apply(&mut workload.specs, seed);
    }
    Ok(Some(workload))
}

/// One line for the report's header: what is replayed, over how long.
pub fn describe(summary: &TraceSummary) -> String {
    format!(
        "{} {}: {} of {} records ({} skipped), {:.1} s of trace replayed in {:.1} s (time scale {})",
        summary.format,
        summary.path,
        summary.num_replayed,
        summary.num_records,
        summary.num_skipped,
        summary.trace_span_s,
        summary.replay_span_s,
        summary.time_scale
    )
}
