//! [`build_trace`]: a trace file → the requests to replay, their arrival times and a summary.

use pagoda_text::tokenizer::TextTokenizer;

use super::arrivals::ReplayClock;
use super::prompts::PromptBuilder;
use super::request::{LineError, ParsedTrace, TraceConfig, TraceFormat, TraceRequest};
use super::summary::{ideal_prefix_hit_tokens, TraceSummary};
use super::{azure, burstgpt, mooncake};
use crate::dataset::error::DatasetError;
use crate::dataset::exact_len::ExactTextGenerator;
use crate::dataset::parallel;
use crate::dataset::read::read_file;
use crate::workload::RequestSpec;

/// A trace ready to replay: the requests, when each is due, and what the result records.
#[derive(Debug, Clone)]
pub struct TraceWorkload {
    pub specs: Vec<RequestSpec>,
    pub arrivals_s: Vec<f64>,
    pub summary: TraceSummary,
}

/// Prompts whose tokenization is checked before the replay (see [`PromptBuilder::check`]).
const NUM_CHECKED_PROMPTS: usize = 4;

/// Reads, orders and cuts the trace, and builds its prompts (the same for the same `seed`).
pub fn build_trace(
    config: &TraceConfig,
    tokenizer: &TextTokenizer,
    seed: u64,
) -> Result<TraceWorkload, DatasetError> {
    let clock = ReplayClock {
        time_scale: config.time_scale,
        duration_s: config.duration_s,
        max_requests: config.max_requests,
    };
    clock.validate()?;
    let parsed = load(config)?;
    let num_records = parsed.num_records;
    let mut requests = replayable(parsed.requests);
    let num_skipped = num_records - requests.len();
    if requests.is_empty() {
        return Err(DatasetError::Empty {
            path: config.path.display().to_string(),
            message: format!(
                "no request to replay ({num_records} records, none with both input and output tokens)"
            ),
        });
    }
    let arrivals_s = clock.arrival_times(&requests);
    requests.truncate(arrivals_s.len());
    let builder = PromptBuilder::new(
        &ExactTextGenerator::new(tokenizer)?,
        config.block_size,
        seed,
    )?;
    for (index, request) in requests.iter().enumerate().take(NUM_CHECKED_PROMPTS) {
        builder.check(tokenizer, index, request)?;
    }
    let indexed: Vec<(usize, &TraceRequest)> = requests.iter().enumerate().collect();
    let specs = parallel::try_map(&indexed, |&(index, request)| {
        Ok::<_, DatasetError>(RequestSpec::text(
            builder.prompt(index, request),
            request.input_tokens,
            request.output_tokens,
        ))
    })?;
    let summary = summarize(config, &requests, &arrivals_s, num_records, num_skipped);
    Ok(TraceWorkload {
        specs,
        arrivals_s,
        summary,
    })
}

/// The file's requests, parsed by its format; a bad line is an error naming it.
fn load(config: &TraceConfig) -> Result<ParsedTrace, DatasetError> {
    let text = read_file(&config.path)?;
    if config.model.is_some() && config.format != TraceFormat::BurstGpt {
        return Err(DatasetError::InvalidConfig(
            "--trace-model filters BurstGPT traces only (other formats name no model)".into(),
        ));
    }
    let parsed = match config.format {
        TraceFormat::Mooncake => mooncake::parse(&text),
        TraceFormat::BurstGpt => burstgpt::parse(&text, config.model.as_deref()),
        TraceFormat::Azure => azure::parse(&text),
    };
    parsed.map_err(|LineError { line, message }| DatasetError::TraceLine {
        path: config.path.display().to_string(),
        line,
        message: format!("{message} (a {} trace)", config.format.name()),
    })
}

/// The requests that can be sent (some input, some output), in timestamp order; equal
/// timestamps keep the file's order.
fn replayable(mut requests: Vec<TraceRequest>) -> Vec<TraceRequest> {
    requests.retain(|r| r.input_tokens > 0 && r.output_tokens > 0);
    requests.sort_by(|a, b| a.timestamp_s.total_cmp(&b.timestamp_s));
    requests
}

fn summarize(
    config: &TraceConfig,
    requests: &[TraceRequest],
    arrivals_s: &[f64],
    num_records: usize,
    num_skipped: usize,
) -> TraceSummary {
    let span_s = match (requests.first(), requests.last()) {
        (Some(first), Some(last)) => last.timestamp_s - first.timestamp_s,
        _ => 0.0,
    };
    let is_mooncake = config.format == TraceFormat::Mooncake;
    TraceSummary {
        format: config.format.name().to_string(),
        path: config.path.display().to_string(),
        num_records,
        num_skipped,
        num_replayed: requests.len(),
        time_scale: config.time_scale,
        trace_span_s: span_s,
        replay_span_s: arrivals_s.last().copied().unwrap_or(0.0),
        block_size: is_mooncake.then_some(config.block_size),
        model: config.model.clone(),
        num_input_tokens: requests.iter().map(|r| r.input_tokens).sum(),
        ideal_prefix_hit_tokens: is_mooncake
            .then(|| ideal_prefix_hit_tokens(requests, config.block_size)),
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
