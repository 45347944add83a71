//! The trace flags: what clap refuses with a trace, and the replay they describe.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use clap::Parser;

use super::*;
use crate::cli::serve_args::{DatasetName, ServeArgs};

#[derive(Debug, Parser)]
struct Command {
    #[command(flatten)]
    serve: ServeArgs,
}

fn parse(flags: &str) -> Result<ServeArgs, clap::Error> {
    let words = std::iter::once("serve").chain(flags.split_whitespace());
    Command::try_parse_from(words).map(|c| c.serve)
}

const TRACE: &str = "--dataset-name trace --dataset-path t.jsonl --trace-format mooncake";

#[test]
fn a_trace_gives_its_config() {
    let args = parse(&format!(
        "{TRACE} --trace-time-scale 0.5 --trace-block-size 32 --trace-max-requests 9 --duration 60"
    ))
    .unwrap();
    assert_eq!(args.dataset_name, DatasetName::Trace);
    assert!(
        args.ignore_eos(),
        "a trace's output lengths are the trace's"
    );
    let config = args
        .trace
        .config(args.dataset_path.as_deref(), args.duration)
        .unwrap()
        .unwrap();
    assert_eq!(config.path, PathBuf::from("t.jsonl"));
    assert_eq!(config.format, TraceFormat::Mooncake);
    assert_eq!(config.time_scale, 0.5);
    assert_eq!(config.block_size, 32);
    assert_eq!(config.max_requests, Some(9));
    assert_eq!(config.duration_s, Some(60.0));
    let defaults = parse(TRACE).unwrap();
    let config = defaults
        .trace
        .config(Some(Path::new("t")), None)
        .unwrap()
        .unwrap();
    assert_eq!((config.time_scale, config.block_size), (1.0, 512));
}

#[test]
fn schedule_flags_and_num_prompts_are_refused_with_a_trace() {
    for flag in [
        "--request-rate 5",
        "--burstiness 0.5",
        "--ramp-up-strategy linear",
        "--ramp-up-start-rps 1",
        "--ramp-up-end-rps 2",
        "--num-prompts 10",
    ] {
        let error = parse(&format!("{TRACE} {flag}")).unwrap_err().to_string();
        assert!(error.contains("cannot be used with"), "{flag}: {error}");
    }
}

#[test]
fn trace_flags_need_a_trace() {
    let error = parse("--dataset-name trace --dataset-path t.jsonl")
        .unwrap_err()
        .to_string();
    assert!(error.contains("--trace-format"), "{error}");
    for flag in [
        "--trace-time-scale 2",
        "--trace-block-size 64",
        "--trace-model GPT-4",
        "--trace-max-requests 3",
    ] {
        let error = parse(flag).unwrap_err().to_string();
        assert!(error.contains("--trace-format"), "{flag}: {error}");
    }
    // Other datasets parse as before and describe no replay.
    let random = parse("--num-prompts 10 --request-rate 5").unwrap();
    assert!(random.trace.config(None, None).unwrap().is_none());
}

#[test]
fn a_trace_needs_a_path_and_a_model_filter_needs_burstgpt() {
    let args = parse("--dataset-name trace --trace-format azure --trace-model x").unwrap();
    let no_path = args.trace.config(None, None).unwrap_err().to_string();
    assert!(no_path.contains("--dataset-path"), "{no_path}");
    let error = args
        .trace
        .config(Some(Path::new("a.csv")), None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("BurstGPT"), "{error}");
    let burst = parse("--dataset-name trace --trace-format burstgpt --trace-model GPT-4").unwrap();
    let config = burst
        .trace
        .config(Some(Path::new("b.csv")), None)
        .unwrap()
        .unwrap();
    assert_eq!(config.format, TraceFormat::BurstGpt);
    assert_eq!(config.model.as_deref(), Some("GPT-4"));
}
