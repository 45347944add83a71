#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::dataset::test_support::{data_path, tokenizer};

fn write_temp(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

fn config(path: &Path, format: TraceFormat) -> TraceConfig {
    TraceConfig::new(path.to_path_buf(), format)
}

fn sample(name: &str) -> PathBuf {
    data_path(&format!("traces/{name}"))
}

#[test]
fn a_mooncake_trace_replays_in_time_order_with_shared_blocks() {
    let file = write_temp(concat!(
        "{\"timestamp\": 2000, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [1, 3]}\n",
        "{\"timestamp\": 1000, \"input_length\": 64, \"output_length\": 5, \"hash_ids\": [1, 2]}\n",
        "{\"timestamp\": 1500, \"input_length\": 10, \"output_length\": 0, \"hash_ids\": [9]}\n",
        "{\"timestamp\": 2000, \"input_length\": 32, \"output_length\": 2, \"hash_ids\": [4]}\n",
    ));
    let mut config = config(file.path(), TraceFormat::Mooncake);
    config.block_size = 32;
    config.time_scale = 0.5;
    let workload = build_trace(&config, tokenizer(), 7).unwrap();
    assert_eq!(workload.arrivals_s, [0.0, 0.5, 0.5]);
    let lengths: Vec<(usize, usize)> = workload
        .specs
        .iter()
        .map(|s| (s.input_tokens, s.output_tokens))
        .collect();
    assert_eq!(lengths, [(64, 5), (40, 3), (32, 2)]);
    let ids: Vec<Vec<u32>> = workload
        .specs
        .iter()
        .map(|s| tokenizer().encode(&s.prompt.as_text(), false).unwrap())
        .collect();
    assert_eq!(ids[0].len(), 64);
    assert_eq!(ids[1].len(), 40);
    assert_eq!(ids[0][..32], ids[1][..32], "hash id 1 is one block");
    assert_ne!(ids[0][32..40], ids[1][32..40]);
    assert_ne!(ids[2][..], ids[0][..32]);
    let summary = &workload.summary;
    assert_eq!(summary.format, "mooncake");
    assert_eq!((summary.num_records, summary.num_skipped), (4, 1));
    assert_eq!(summary.num_replayed, 3);
    assert_eq!(summary.trace_span_s, 1.0);
    assert_eq!(summary.replay_span_s, 0.5);
    assert_eq!(summary.block_size, Some(32));
    assert_eq!(summary.num_input_tokens, 136);
    assert_eq!(summary.ideal_prefix_hit_tokens, Some(32));
    // The same seed gives the same prompts.
    let again = build_trace(&config, tokenizer(), 7).unwrap();
    assert_eq!(again.specs, workload.specs);
}

#[test]
fn a_bad_line_is_an_error_naming_the_file_and_line() {
    let file = write_temp(concat!(
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1}\n",
        "{\"timestamp\": 1, \"input_length\": 4}\n",
    ));
    let error = build_trace(&config(file.path(), TraceFormat::Mooncake), tokenizer(), 0)
        .unwrap_err()
        .to_string();
    let expected = format!("{}:2: no \"output_length\"", file.path().display());
    assert!(error.starts_with(&expected), "{error}");
    assert!(error.contains("a mooncake trace"), "{error}");
    // A CSV file read as Mooncake names its first line.
    let csv = build_trace(
        &config(&sample("azure_sample.csv"), TraceFormat::Mooncake),
        tokenizer(),
        0,
    )
    .unwrap_err()
    .to_string();
    assert!(
        csv.contains("azure_sample.csv:1: not a Mooncake record"),
        "{csv}"
    );
    let missing = build_trace(
        &config(Path::new("/nonexistent/t.jsonl"), TraceFormat::Mooncake),
        tokenizer(),
        0,
    )
    .unwrap_err()
    .to_string();
    assert!(missing.contains("/nonexistent/t.jsonl"), "{missing}");
}

#[test]
fn a_trace_with_nothing_to_replay_is_an_error() {
    let file = write_temp("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,5,0,5,API log\n");
    let error = build_trace(&config(file.path(), TraceFormat::BurstGpt), tokenizer(), 0)
        .unwrap_err()
        .to_string();
    assert!(error.contains("no request to replay"), "{error}");
}

#[test]
fn duration_and_cap_cut_the_replay() {
    let mut config = config(&sample("mooncake_sample.jsonl"), TraceFormat::Mooncake);
    config.duration_s = Some(2.0);
    let workload = build_trace(&config, tokenizer(), 0).unwrap();
    assert!(workload.arrivals_s.iter().all(|&t| t < 2.0));
    let all = build_trace(
        &super::super::TraceConfig {
            duration_s: None,
            ..config.clone()
        },
        tokenizer(),
        0,
    )
    .unwrap();
    let num_before = all.arrivals_s.iter().filter(|&&t| t < 2.0).count();
    assert_eq!(workload.specs.len(), num_before);
    assert!(num_before < all.specs.len());
    config.duration_s = None;
    config.max_requests = Some(5);
    assert_eq!(build_trace(&config, tokenizer(), 0).unwrap().specs.len(), 5);
}

#[test]
fn the_sample_traces_replay() {
    for (name, format, expected_records) in [
        ("mooncake_sample.jsonl", TraceFormat::Mooncake, 150),
        ("mooncake_small_blocks.jsonl", TraceFormat::Mooncake, 150),
        ("burstgpt_sample.csv", TraceFormat::BurstGpt, 150),
        ("azure_sample.csv", TraceFormat::Azure, 150),
    ] {
        let mut config = config(&sample(name), format);
        if name.contains("small_blocks") {
            config.block_size = 32;
        }
        let workload = build_trace(&config, tokenizer(), 1).unwrap();
        let summary = &workload.summary;
        assert_eq!(summary.num_records, expected_records, "{name}");
        assert_eq!(
            summary.num_replayed + summary.num_skipped,
            expected_records,
            "{name}"
        );
        assert!(workload.arrivals_s.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(workload.arrivals_s[0], 0.0);
        for spec in workload.specs.iter().take(10) {
            let ids = tokenizer().encode(&spec.prompt.as_text(), false).unwrap();
            assert_eq!(ids.len(), spec.input_tokens, "{name}");
        }
        if format == TraceFormat::Mooncake {
            assert!(summary.ideal_prefix_hit_tokens.unwrap() > 0, "{name}");
        }
    }
}

#[test]
fn a_model_filter_is_for_burstgpt_only() {
    let mut burst = config(&sample("burstgpt_sample.csv"), TraceFormat::BurstGpt);
    burst.model = Some("gpt-4".into());
    let workload = build_trace(&burst, tokenizer(), 0).unwrap();
    let all = build_trace(
        &config(&sample("burstgpt_sample.csv"), TraceFormat::BurstGpt),
        tokenizer(),
        0,
    )
    .unwrap();
    assert!(workload.specs.len() < all.specs.len());
    assert_eq!(workload.summary.model.as_deref(), Some("gpt-4"));
    let mut azure = config(&sample("azure_sample.csv"), TraceFormat::Azure);
    azure.model = Some("x".into());
    assert!(matches!(
        build_trace(&azure, tokenizer(), 0),
        Err(DatasetError::InvalidConfig(_))
    ));
}
