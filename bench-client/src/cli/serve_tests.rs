//! Tests of `serve`'s flag handling (request bodies, headers, dataset lengths).

use clap::Parser;

use super::*;
use crate::cli::serve_args::ServeArgs;
use crate::cli::serve_workload::dataset_config;
use crate::dataset::DatasetConfig;

#[derive(Debug, Parser)]
struct Command {
    #[command(flatten)]
    serve: ServeArgs,
}

fn parse(flags: &[&str]) -> ServeArgs {
    Command::try_parse_from(std::iter::once("serve").chain(flags.iter().copied()))
        .expect("parses")
        .serve
}

fn output_tokens(flags: &[&str]) -> usize {
    let args = parse(flags);
    match dataset_config(&args).expect("a dataset") {
        DatasetConfig::Random(random) => random.output_tokens,
        DatasetConfig::PrefixRepetition(prefix) => prefix.output_tokens,
        other => panic!("{other:?}"),
    }
}

/// `--output-len` is vLLM's general alias: it sets the random and prefix-repetition lengths.
#[test]
fn output_len_overrides_the_synthetic_datasets_lengths() {
    assert_eq!(output_tokens(&["--random-output-len", "4"]), 4);
    assert_eq!(
        output_tokens(&["--random-output-len", "4", "--output-len", "7"]),
        7
    );
    let prefix = ["--dataset-name", "prefix-repetition", "--output-len", "9"];
    assert_eq!(output_tokens(&prefix), 9);
}

/// vLLM's `--chat-template-kwargs` goes into chat bodies; its no-op flags are accepted.
#[test]
fn chat_template_kwargs_reach_chat_bodies_only() {
    let kwargs = r#"{"enable_thinking": false}"#;
    let body = |flags: &[&str]| {
        let config = request_config(&parse(flags), "m", StructuredOutput::default());
        config.map(|c| c.sampling.extra_body.get("chat_template_kwargs").cloned())
    };
    let chat = [
        "--chat-template-kwargs",
        kwargs,
        "--disable-shuffle",
        "--skip-chat-template",
    ];
    let sent = body(&chat).expect("valid").expect("sent");
    assert_eq!(sent["enable_thinking"], false);
    let completions = [
        "--chat-template-kwargs",
        kwargs,
        "--endpoint",
        "/v1/completions",
    ];
    assert_eq!(body(&completions).expect("valid"), None);
    assert!(body(&["--chat-template-kwargs", "[1]"]).is_err());
}

/// vLLM's sampling flags reach the body; `--extra-body` wins over them.
#[test]
fn sampling_flags_reach_the_body_and_extra_body_wins() {
    let flags = [
        "--top-k",
        "20",
        "--min-p",
        "0.1",
        "--repetition-penalty",
        "1.2",
        "--presence-penalty",
        "-0.5",
        "--logprobs",
        "2",
        "--extra-body",
        r#"{"top_k": 5}"#,
    ];
    let config = request_config(&parse(&flags), "m", StructuredOutput::default()).expect("valid");
    let extra = &config.sampling.extra_body;
    assert_eq!(extra["top_k"], 5, "--extra-body's own key wins");
    assert_eq!(extra["min_p"], 0.1);
    assert_eq!(extra["repetition_penalty"], 1.2);
    assert_eq!(extra["presence_penalty"], -0.5);
    assert_eq!(extra["logprobs"], true);
    assert_eq!(extra["top_logprobs"], 2);
    assert!(
        !extra.contains_key("frequency_penalty"),
        "not given, not sent"
    );
}

/// Headers as pagoda writes them (`NAME:VALUE`) and as vLLM does (`NAME=VALUE`, several after
/// one flag); vLLM's flag aliases parse.
#[test]
fn headers_take_either_separator_and_vllm_aliases_parse() {
    let flags = [
        "--header",
        "x-a=1",
        "x-b: two:parts",
        "--header",
        "Authorization=Bearer k=v",
        "--ready-check-timeout-sec",
        "0",
        "--disable-tqdm",
    ];
    let args = parse(&flags);
    assert_eq!(args.ready_timeout, 0.0);
    assert!(args.disable_progress);
    let config = request_config(&args, "m", StructuredOutput::default()).expect("valid");
    let expected = [
        ("x-a", "1"),
        ("x-b", "two:parts"),
        ("Authorization", "Bearer k=v"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    assert_eq!(config.access.headers, expected);
    for bad in ["no-separator", ":value", " =value"] {
        let args = parse(&["--header", bad]);
        assert!(
            request_config(&args, "m", StructuredOutput::default()).is_err(),
            "{bad}"
        );
    }
}

/// vLLM's general and per-dataset length aliases, its model-name split and no-op flags.
#[test]
fn vllm_length_aliases_and_model_names_parse() {
    let input = |flags: &[&str]| match dataset_config(&parse(flags)).expect("a dataset") {
        DatasetConfig::Random(random) => random.input_tokens,
        other => panic!("{other:?}"),
    };
    assert_eq!(input(&["--random-input-len", "4"]), 4);
    assert_eq!(input(&["--random-input-len", "4", "--input-len", "6"]), 6);
    for alias in ["--sharegpt-output-len", "--custom-output-len"] {
        assert_eq!(parse(&[alias, "11"]).output_len, Some(11), "{alias}");
    }
    let named = parse(&[
        "--model",
        "org/Model-1B",
        "--served-model-name",
        "prod",
        "--trust-remote-code",
    ]);
    assert_eq!(named.model_name(), Some("prod"));
    assert_eq!(parse(&["--model", "m"]).model_name(), Some("m"));
    assert_eq!(parse(&[]).model_name(), None);
    assert!(Command::try_parse_from(["serve", "--tokenizer-mode", "mistral"]).is_err());
}

#[test]
fn timeline_thresholds_are_two_ascending_positive_milliseconds() {
    assert_eq!(parse(&[]).timeline_itl_thresholds, [25.0, 50.0]);
    assert!(!parse(&[]).writes_result_dir());
    let args = parse(&["--plot-timeline", "--timeline-itl-thresholds", "10, 80.5"]);
    assert_eq!(args.timeline_itl_thresholds, [10.0, 80.5]);
    assert!(args.writes_result_dir() && !args.saves_result());
    for bad in ["50,25", "0,10", "10", "10,20,30", "a,b"] {
        let parsed = Command::try_parse_from(["serve", "--timeline-itl-thresholds", bad]);
        assert!(parsed.is_err(), "{bad}");
    }
}

/// vLLM's `--random-range-ratio` takes one number for both lengths or an object for each.
#[test]
fn random_range_ratio_takes_a_number_or_vllms_object() {
    use crate::dataset::RangeRatio;
    assert_eq!(parse(&[]).random_range_ratio, RangeRatio::both(0.0));
    let one = parse(&["--random-range-ratio", "0.3"]);
    assert_eq!(one.random_range_ratio, RangeRatio::both(0.3));
    let each = parse(&["--random-range-ratio", r#"{"input": 0.1, "output": 0.6}"#]);
    let expected = RangeRatio {
        input: 0.1,
        output: 0.6,
    };
    assert_eq!(each.random_range_ratio, expected);
}
