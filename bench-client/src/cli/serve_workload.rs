//! `serve`'s workload: the dataset its flags name, built into requests, with their arrival
//! times (repeated to the schedule's length unless `--no-oversample`).

use std::sync::Arc;

use anyhow::{bail, Context};
use pagoda_text::tokenizer::TextTokenizer;

use crate::cli::serve_args::{DatasetName, ServeArgs};
use crate::dataset::{
    build_workload, dataset_size, DatasetConfig, PrefixRepetitionConfig, RandomConfig,
};
use crate::lora::LoraPlan;
use crate::schedule::{arrival_times, arrival_times_for_duration, RequestRate, ScheduleConfig};
use crate::workload::RequestSpec;

/// The dataset `--dataset-name` and its options describe.
pub fn dataset_config(args: &ServeArgs) -> anyhow::Result<DatasetConfig> {
    let path = || {
        args.dataset_path
            .clone()
            .context("--dataset-path is required for this dataset")
    };
    Ok(match args.dataset_name {
        DatasetName::Random => DatasetConfig::Random(RandomConfig {
            input_tokens: args.input_len.unwrap_or(args.random_input_len),
            output_tokens: args.output_len.unwrap_or(args.random_output_len),
            range_ratio: args.random_range_ratio,
            input_stddev: args.random_input_len_stddev,
            output_stddev: args.random_output_len_stddev,
            prefix_tokens: args.random_prefix_len,
        }),
        DatasetName::PrefixRepetition => DatasetConfig::PrefixRepetition(PrefixRepetitionConfig {
            num_prefixes: args.prefix_repetition_num_prefixes,
            prefix_tokens: args.prefix_repetition_prefix_len,
            suffix_tokens: args.prefix_repetition_suffix_len,
            output_tokens: args.output_len.unwrap_or(args.prefix_repetition_output_len),
        }),
        DatasetName::Sharegpt if args.conversation.multi_turn => {
            DatasetConfig::Conversations(args.conversation.sharegpt(path()?, args.output_len))
        }
        DatasetName::Sharegpt => DatasetConfig::ShareGpt {
            path: path()?,
            output_tokens: args.output_len,
        },
        DatasetName::Custom => DatasetConfig::CustomJsonl {
            path: path()?,
            output_tokens: args.output_len,
        },
        DatasetName::Conversation => DatasetConfig::Conversations(args.conversation.synthetic()),
        DatasetName::Trace => bail!("a trace is replayed with its own arrival times"),
    })
}

/// The workload and its arrival times: built from the dataset, repeated to the schedule's
/// length, each request's adapter named when `--lora-modules` asks.
pub async fn workload(
    args: &ServeArgs,
    tokenizer: &Arc<TextTokenizer>,
    schedule: &ScheduleConfig,
    lora: Option<&LoraPlan>,
) -> anyhow::Result<(Vec<RequestSpec>, Vec<f64>)> {
    let dataset = dataset_config(args)?;
    let seed = args.seed;
    let num_prompts = match args.no_oversample {
        true => without_oversampling(&dataset, args.num_prompts).await?,
        false => args.num_prompts,
    };
    let specs = {
        let (tokenizer, dataset) = (Arc::clone(tokenizer), dataset.clone());
        tokio::task::spawn_blocking(move || build_workload(&dataset, num_prompts, &tokenizer, seed))
            .await??
    };
    // A conversation run schedules conversation starts; the runner cycles the conversations.
    let is_conversation_run = matches!(dataset, DatasetConfig::Conversations(_));
    let num_arrivals = if is_conversation_run {
        num_prompts
    } else {
        specs.len()
    };
    let mut arrivals_s = match args.duration {
        Some(duration_s) if matches!(schedule.rate(), RequestRate::PerSecond(_)) => {
            arrival_times_for_duration(duration_s, schedule)?
        }
        _ => arrival_times(num_arrivals, schedule),
    };
    if args.no_oversample {
        // A timed run ends early rather than send a request twice.
        arrivals_s.truncate(num_arrivals);
    }
    if is_conversation_run {
        return Ok((specs, arrivals_s));
    }
    let mut specs = cycle_to(specs, arrivals_s.len());
    if let Some(lora) = lora {
        lora.apply(&mut specs, seed);
    }
    Ok((specs, arrivals_s))
}

/// `--no-oversample`: `num_prompts`, or fewer when the dataset file holds fewer requests (vLLM's
/// flag; without it they repeat).
async fn without_oversampling(
    dataset: &DatasetConfig,
    num_prompts: usize,
) -> anyhow::Result<usize> {
    let dataset = dataset.clone();
    let size = tokio::task::spawn_blocking(move || dataset_size(&dataset)).await??;
    match size {
        Some(size) if size < num_prompts => {
            eprintln!(
                "the dataset holds {size} requests: running {size}, not {num_prompts} (--no-oversample)"
            );
            Ok(size)
        }
        _ => Ok(num_prompts),
    }
}

/// The workload repeated (in order) until it has `len` requests.
fn cycle_to(specs: Vec<RequestSpec>, len: usize) -> Vec<RequestSpec> {
    if specs.is_empty() || specs.len() == len {
        return specs;
    }
    specs.iter().cycle().take(len).cloned().collect()
}
