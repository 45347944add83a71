//! `pagoda-bench serve`: workload (and its LoRA adapters) → schedule → runner → statistics →
//! report and result file.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use pagoda_text::tokenizer::TextTokenizer;
use serde_json::Value;

use crate::analysis::scrape::{Scraper, ServerSideStats};
use crate::cli::backend::resolve_endpoint;
use crate::cli::serve_args::{EndpointArg, ServeArgs};
use crate::cli::serve_workload::workload;
use crate::cli::trace_replay::trace_workload;
use crate::client::{
    discover_model, readiness_check, Endpoint, RequestConfig, Sampling, ServerAccess,
    StructuredOutput,
};
use crate::dataset::trace::TraceSummary;
use crate::record::RequestRecord;
use crate::runner::{run, run_conversations, ConversationConfig, RunConfig, RunOutcome};
use crate::schedule::{RampUp, RampUpStrategy, RequestRate, ScheduleConfig};
use crate::stats::{
    parse_goodput, parse_percentile_metrics, parse_percentiles, summarize, BenchSummary,
    IntegrityThresholds, SummaryOptions,
};
use crate::workload::RequestSpec;

/// One finished run: what was sent, what came back, and the statistics.
#[derive(Debug)]
pub struct ServeRun {
    pub model: String,
    pub outcome: RunOutcome,
    pub summary: BenchSummary,
    pub server_side: Option<Value>,
}

/// Everything a run needs that does not change between repeated runs.
#[derive(Debug)]
pub struct Prepared {
    pub model: String,
    pub specs: Vec<RequestSpec>,
    pub arrivals_s: Vec<f64>,
    pub schedule: ScheduleConfig,
    pub run_config: RunConfig,
    pub options: SummaryOptions,
    /// `--scrape-metrics` URL and interval.
    /// `--scrape-metrics`: where, how often, and whether any certificate goes (`--insecure`).
    pub scrape: Option<(String, Duration, bool)>,
    /// A run of closed-loop conversations: `specs` are their turns, `arrivals_s` their starts.
    pub conversation: Option<ConversationConfig>,
    /// The replayed trace (`--dataset-name trace`).
    pub trace: Option<TraceSummary>,
}

fn endpoint(arg: EndpointArg) -> Endpoint {
    match arg {
        EndpointArg::Chat => Endpoint::Chat,
        EndpointArg::Completions => Endpoint::Completions,
    }
}

fn schedule_config(args: &ServeArgs) -> anyhow::Result<ScheduleConfig> {
    let rate: RequestRate = args.request_rate.parse()?;
    let ramp_up = match (
        &args.ramp_up_strategy,
        args.ramp_up_start_rps,
        args.ramp_up_end_rps,
    ) {
        (None, None, None) => None,
        (Some(strategy), Some(start_rps), Some(end_rps)) => Some(RampUp {
            strategy: strategy.parse::<RampUpStrategy>()?,
            start_rps,
            end_rps,
        }),
        _ => bail!("--ramp-up-strategy, --ramp-up-start-rps and --ramp-up-end-rps go together"),
    };
    Ok(ScheduleConfig::new(
        rate,
        args.burstiness,
        ramp_up,
        args.seed,
    )?)
}

fn summary_options(args: &ServeArgs, schedule: &ScheduleConfig) -> anyhow::Result<SummaryOptions> {
    let integrity = IntegrityThresholds {
        max_p99_send_lag_ms: args.max_p99_send_lag_ms,
        ..IntegrityThresholds::default()
    };
    Ok(SummaryOptions {
        percentiles: parse_percentiles(&args.metric_percentiles)?,
        percentile_metrics: parse_percentile_metrics(&args.percentile_metrics)?,
        goodput: parse_goodput(&args.goodput)?,
        target_request_rate: match schedule.rate() {
            RequestRate::PerSecond(rate) => Some(rate),
            RequestRate::Infinite => None,
        },
        max_concurrency: args.max_concurrency,
        integrity,
        slice_duration_s: args.slice_duration,
        ..SummaryOptions::default()
    })
}

fn request_config(
    args: &ServeArgs,
    model: &str,
    structured_output: StructuredOutput,
) -> anyhow::Result<RequestConfig> {
    let endpoint_arg = resolve_endpoint(args.backend.as_deref(), args.endpoint)?;
    let mut request = RequestConfig::new(endpoint(endpoint_arg), &args.base_url(), model);
    request.structured_output = structured_output;
    request.access = server_access(args)?;
    request.timeout = Duration::from_secs_f64(args.request_timeout);
    request.pool_idle_timeout = Duration::try_from_secs_f64(args.pool_idle_timeout)
        .with_context(|| format!("--pool-idle-timeout {}", args.pool_idle_timeout))?;
    request.client_id = args.client_id;
    request.cancellation = args.cancellation()?;
    request.keep_generated_text = args.save_detailed;
    request.request_id_prefix = Some(
        args.request_id_prefix
            .clone()
            .unwrap_or_else(|| format!("pagoda-bench-{:08x}-", rand::random::<u32>())),
    );
    let mut extra_body = match &args.extra_body {
        None => serde_json::Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => bail!("--extra-body must be a JSON object, got {text:?}"),
        },
    };
    if let Some(text) = &args.chat_template_kwargs {
        let kwargs = match serde_json::from_str::<Value>(text) {
            Ok(kwargs @ Value::Object(_)) => kwargs,
            _ => bail!("--chat-template-kwargs must be a JSON object, got {text:?}"),
        };
        if endpoint(endpoint_arg) == Endpoint::Chat {
            extra_body.entry("chat_template_kwargs").or_insert(kwargs);
        }
    }
    for (key, value) in args.sampling.body_fields(endpoint(endpoint_arg)) {
        extra_body.entry(key).or_insert(value);
    }
    request.sampling = Sampling {
        temperature: Some(args.sampling.temperature),
        top_p: args.sampling.top_p,
        ignore_eos: args.ignore_eos(),
        extra_body,
    };
    Ok(request)
}

/// `--api-key`, `--header` and `--insecure`.
fn server_access(args: &ServeArgs) -> anyhow::Result<ServerAccess> {
    let headers = args.headers.iter().map(|header| parse_header(header));
    Ok(ServerAccess {
        api_key: args.api_key.clone(),
        headers: headers.collect::<anyhow::Result<_>>()?,
        insecure: args.insecure,
    })
}

/// A `--header`: `NAME:VALUE` or `NAME=VALUE`, split at whichever comes first (a header name
/// holds neither).
fn parse_header(header: &str) -> anyhow::Result<(String, String)> {
    let split_at = header
        .find([':', '='])
        .with_context(|| format!("--header {header:?}: expected NAME:VALUE or NAME=VALUE"))?;
    let (name, value) = (header[..split_at].trim(), header[split_at + 1..].trim());
    anyhow::ensure!(!name.is_empty(), "--header {header:?}: the name is empty");
    Ok((name.to_string(), value.to_string()))
}

/// Loads the tokenizer of `--tokenizer`, else of the default model.
pub fn load_tokenizer(
    path: Option<&std::path::Path>,
) -> anyhow::Result<(Arc<TextTokenizer>, PathBuf)> {
    let path = tokenizer_path(path)?;
    let side = pagoda_text::prompt_side::PromptSide::load(&path)
        .with_context(|| format!("cannot load a tokenizer from {}", path.display()))?;
    Ok((Arc::new(side.tokenizer), path))
}

/// `--tokenizer` as given, else the default model, found or fetched (by the engine's code).
#[cfg(feature = "offline")]
fn tokenizer_path(path: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    Ok(pagoda_engine::args::default_model::resolve_model_path(
        path,
    )?)
}

/// `--tokenizer`, required: without the `offline` feature there is no default model.
#[cfg(not(feature = "offline"))]
fn tokenizer_path(path: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    let path = path.context(
        "--tokenizer is required: this pagoda-bench was built without the `offline` feature, \
         which finds or fetches the default model",
    )?;
    anyhow::ensure!(
        path.exists(),
        "--tokenizer {}: no such file or directory",
        path.display()
    );
    Ok(path.to_path_buf())
}

/// Checks the server, builds the workload and its schedule.
pub async fn prepare(args: &ServeArgs, tokenizer: Arc<TextTokenizer>) -> anyhow::Result<Prepared> {
    // Flags (and the files they name) are checked before the server is asked anything.
    let endpoint_arg = resolve_endpoint(args.backend.as_deref(), args.endpoint)?;
    let structured_output = args.structured_output.load(endpoint(endpoint_arg))?;
    let lora = args.lora.plan()?;
    let conversation = args
        .conversation
        .is_conversation_run(args.dataset_name)?
        .then(|| args.conversation.runner_config(args.seed));
    if conversation.is_some() && args.probe_request_rate > 0.0 {
        bail!("--probe-request-rate is not supported with conversations");
    }
    if conversation.is_some() && lora.is_some() {
        bail!("--lora-modules is not supported with conversations");
    }
    let base_url = args.base_url();
    let access = server_access(args)?;
    if args.ready_timeout > 0.0 {
        readiness_check(
            &base_url,
            &access,
            Duration::from_secs_f64(args.ready_timeout),
        )
        .await
        .with_context(|| format!("the server at {base_url} is not ready"))?;
    }
    let model = match args.model_name() {
        Some(model) => model.to_string(),
        None => discover_model(&base_url, &access).await?,
    };
    let schedule = schedule_config(args)?;
    let options = summary_options(args, &schedule)?;
    let (specs, arrivals_s, trace) =
        match trace_workload(args, &tokenizer, &schedule, lora.as_ref()).await? {
            Some(replay) => (replay.specs, replay.arrivals_s, Some(replay.summary)),
            None => {
                let (specs, arrivals_s) =
                    workload(args, &tokenizer, &schedule, lora.as_ref()).await?;
                (specs, arrivals_s, None)
            }
        };
    let mut run_config = RunConfig::new(request_config(args, &model, structured_output)?);
    run_config.max_concurrency = args.max_concurrency;
    run_config.num_warmups = args.num_warmups;
    run_config.probe_rate_per_s =
        (args.probe_request_rate > 0.0).then_some(args.probe_request_rate);
    run_config.max_duration = args.duration.map(Duration::from_secs_f64);
    run_config.progress = !args.disable_progress;
    let counter = Arc::clone(&tokenizer);
    run_config.tokenizer = Some(Arc::new(move |text: &str| {
        counter
            .encode(text, false)
            .map(|ids| ids.len())
            .unwrap_or(0)
    }));
    let scrape = args.scrape_metrics.clone().map(|url| {
        let interval = Duration::from_secs_f64(args.scrape_interval.max(0.05));
        (url, interval, args.insecure)
    });
    Ok(Prepared {
        model,
        specs,
        arrivals_s,
        schedule,
        run_config,
        options,
        scrape,
        conversation,
        trace,
    })
}

/// Runs the prepared workload once and computes its statistics.
pub async fn run_once(prepared: &Prepared) -> anyhow::Result<(RunOutcome, BenchSummary)> {
    let (specs, arrivals_s, config) = (&prepared.specs, &prepared.arrivals_s, &prepared.run_config);
    let outcome = match &prepared.conversation {
        Some(conversation) => run_conversations(specs, arrivals_s, config, conversation).await?,
        None => run(specs, arrivals_s, config).await?,
    };
    let mut summary = summarize(&outcome.records, &prepared.options);
    // The statistics judge send lag and rate from the records; the runner adds what only it
    // saw: the client's own CPU use.
    for warning in outcome.client.warnings() {
        if warning.contains("CPU") {
            summary.integrity.add_evidence(warning);
        }
    }
    Ok((outcome, summary))
}

/// [`run_once`], sampling the server's `/metrics` meanwhile when `--scrape-metrics` asks.
pub async fn run_once_with_server_view(
    prepared: &Prepared,
) -> anyhow::Result<(RunOutcome, BenchSummary, Option<ServerSideStats>)> {
    let Some((url, interval, insecure)) = &prepared.scrape else {
        let (outcome, summary) = run_once(prepared).await?;
        return Ok((outcome, summary, None));
    };
    let scraper = Scraper::start(url, *interval, *insecure)
        .await
        .with_context(|| format!("cannot scrape {url}"))?;
    let (outcome, summary) = run_once(prepared).await?;
    let server_side = scraper.finish().await?;
    Ok((outcome, summary, Some(server_side)))
}

/// Records of several runs, for `--save-detailed`.
pub fn all_records(runs: &[ServeRun]) -> Vec<RequestRecord> {
    runs.iter()
        .flat_map(|r| r.outcome.records.clone())
        .collect()
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
