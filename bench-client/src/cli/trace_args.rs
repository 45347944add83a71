//! The trace replay flags of `serve` (`--dataset-name trace`): the trace's format, its clock's
//! scale, its block size, a model filter and a request cap. A trace brings its own arrival times,
//! so `--request-rate`, `--burstiness`, the ramp-up flags and `--num-prompts` are refused with it.

use std::path::Path;

use anyhow::bail;
use clap::{Args, ValueEnum};

use crate::dataset::trace::{TraceConfig, TraceFormat};

/// `--trace-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormatArg {
    /// Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids.
    Mooncake,
    /// BurstGPT CSV: Timestamp (s), Model, Request tokens, Response tokens, ...
    Burstgpt,
    /// Azure LLM inference CSV: TIMESTAMP (date and time), ContextTokens, GeneratedTokens.
    Azure,
}

impl From<TraceFormatArg> for TraceFormat {
    fn from(arg: TraceFormatArg) -> Self {
        match arg {
            TraceFormatArg::Mooncake => TraceFormat::Mooncake,
            TraceFormatArg::Burstgpt => TraceFormat::BurstGpt,
            TraceFormatArg::Azure => TraceFormat::Azure,
        }
    }
}

/// Trace replay (`--dataset-name trace --dataset-path FILE`).
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// trace: the file's format (required with --dataset-name trace). Requests are sent at the
    /// trace's times with its input and output lengths; not with --request-rate, --burstiness,
    /// the ramp-up flags or --num-prompts (see --trace-max-requests, --duration).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        required_if_eq("dataset_name", "trace"),
        conflicts_with_all = [
            "request_rate", "burstiness", "ramp_up_strategy", "ramp_up_start_rps",
            "ramp_up_end_rps", "num_prompts",
        ]
    )]
    pub trace_format: Option<TraceFormatArg>,
    /// trace: send each request (timestamp − first timestamp) × SCALE seconds after the start:
    /// 0.5 replays twice as fast, 2 half as fast.
    #[arg(
        long,
        value_name = "SCALE",
        default_value_t = 1.0,
        requires = "trace_format"
    )]
    pub trace_time_scale: f64,
    /// trace (mooncake): prompt tokens per hash id, as the trace was recorded (Mooncake's traces:
    /// 512). Equal hash ids become equal token blocks of this size.
    #[arg(
        long,
        value_name = "TOKENS",
        default_value_t = 512,
        requires = "trace_format"
    )]
    pub trace_block_size: usize,
    /// trace (burstgpt): replay only this model's rows, e.g. ChatGPT or GPT-4 (case-insensitive).
    #[arg(long, value_name = "MODEL", requires = "trace_format")]
    pub trace_model: Option<String>,
    /// trace: replay at most the first N requests. [default: all, up to --duration]
    #[arg(long, value_name = "N", requires = "trace_format")]
    pub trace_max_requests: Option<usize>,
}

impl TraceArgs {
    /// The replay these flags describe for the trace at `path`, cut at `duration_s`; `None`
    /// without `--trace-format` (another dataset).
    pub fn config(
        &self,
        path: Option<&Path>,
        duration_s: Option<f64>,
    ) -> anyhow::Result<Option<TraceConfig>> {
        let Some(format) = self.trace_format else {
            return Ok(None);
        };
        let Some(path) = path else {
            bail!("--dataset-name trace needs --dataset-path (the trace file)");
        };
        let format = TraceFormat::from(format);
        if self.trace_model.is_some() && format != TraceFormat::BurstGpt {
            bail!("--trace-model filters BurstGPT traces only (other formats name no model)");
        }
        Ok(Some(TraceConfig {
            block_size: self.trace_block_size,
            time_scale: self.trace_time_scale,
            duration_s,
            max_requests: self.trace_max_requests,
            model: self.trace_model.clone(),
            ..TraceConfig::new(path.to_path_buf(), format)
        }))
    }
}

#[cfg(test)]
#[path = "trace_args_tests.rs"]
mod tests;
