//! The saved JSON carries every vLLM key we claim, with vLLM's meanings, and ours under "pagoda".

use std::collections::BTreeMap;

use super::*;
use crate::record::ErrorKind;
use crate::stats::test_records::{failed, streamed, varied_run};
use crate::stats::{
    parse_goodput, summarize, LoraMeta, MachineInfo, Metric, RampUp, StructuredOutputMeta,
    SummaryOptions, DEFINITIONS,
};

fn meta() -> RunMetadata {
    RunMetadata {
        date: "20260101-120000".into(),
        backend: "openai-chat".into(),
        label: None,
        base_url: "http://127.0.0.1:8000".into(),
        endpoint: "/v1/chat/completions".into(),
        model_id: "Qwen/Qwen3-0.6B".into(),
        tokenizer_id: Some("Qwen/Qwen3-0.6B".into()),
        dataset_name: Some("random".into()),
        num_prompts: 3,
        request_rate: None,
        burstiness: 1.0,
        max_concurrency: Some(8),
        ramp_up: None,
        seed: 0,
        structured_output: Some(StructuredOutputMeta {
            mode: "json_schema".into(),
            file: Some("bench/workloads/json-schema-10-fields.json".into()),
            field: Some("response_format".into()),
            tool_choice: None,
        }),
        lora: Some(LoraMeta {
            modules: vec!["sql-lora".into(), "chat-lora".into()],
            assignment: "round-robin".into(),
        }),
        command_line: vec!["pagoda-bench".into(), "--save-result".into()],
        server_metadata: BTreeMap::from([
            ("tp".to_string(), "2".to_string()),
            ("duration".to_string(), "must not win".to_string()),
        ]),
        machine: MachineInfo {
            hostname: "bench-1".into(),
            num_cpus: 2,
            os: "linux x86_64".into(),
        },
        pagoda_bench_version: "0.1.0".into(),
        start_unix_s: 1_767_268_800.0,
        num_clients: 1,
        request_id_prefix: None,
    }
}

fn records() -> Vec<RequestRecord> {
    vec![
        streamed(1, 0.0, 0.0, &[0.25, 0.5, 0.75], 1.0, 3),
        streamed(0, 0.0, 0.0, &[0.5, 0.75], 1.25, 2),
        failed(2, 0.0, 0.5, ErrorKind::Http(503)),
    ]
}

#[test]
fn every_vllm_key_is_written() {
    let options = SummaryOptions {
        percentiles: vec![50.0, 99.0, 99.9],
        percentile_metrics: vec![
            Metric::Ttft,
            Metric::Tpot,
            Metric::ItlPerChunk,
            Metric::E2el,
        ],
        ..SummaryOptions::default()
    };
    let summary = summarize(&records(), &options);
    let json = vllm_result_json(&summary, &records(), &meta(), true).expect("builds");
    let object = json.as_object().expect("an object");
    let mut expected: Vec<String> = [
        VLLM_SETUP_KEYS,
        VLLM_RESULT_KEYS,
        VLLM_PER_REQUEST_KEYS,
        VLLM_DETAILED_KEYS,
    ]
    .concat()
    .iter()
    .map(|k| k.to_string())
    .collect();
    for name in ["ttft", "tpot", "itl", "e2el"] {
        for stat in ["mean", "median", "std", "p50", "p99", "p99.9"] {
            expected.push(format!("{stat}_{name}_ms"));
        }
    }
    for key in &expected {
        assert!(object.contains_key(key), "missing {key}");
    }
    for key in VLLM_UNFILLED_KEYS.iter().chain(VLLM_RAMP_UP_KEYS) {
        assert!(!object.contains_key(*key), "unexpected {key}");
    }
    // The expected keys, the one --metadata key that does not collide, and ours: nothing else.
    assert_eq!(object.len(), expected.len() + 2, "{:?}", object.keys());
    assert_eq!(object["tp"], "2");
    assert!(object.contains_key(PAGODA_KEY));
}

#[test]
fn values_keep_vllms_meanings() {
    let mut records = records();
    records[0].generated_text = Some("one two three".into());
    records[1].generated_text = Some("four five".into());
    let summary = summarize(&records, &SummaryOptions::default());
    let json = vllm_result_json(&summary, &records, &meta(), true).expect("builds");
    assert_eq!(json["duration"], 1.25);
    assert_eq!(json["completed"], 2);
    assert_eq!(json["failed"], 1);
    assert_eq!(json["total_output_tokens"], 5);
    assert_eq!(json["request_rate"], "inf");
    assert_eq!(json["max_concurrency"], 8);
    assert_eq!(json["endpoint_type"], "openai-chat");
    assert_eq!(json["request_goodput"], serde_json::Value::Null);
    // vLLM's meaning: successful requests per 1-second bucket (two); ours, every request in
    // flight at once (three, the failed one included), stays in the summary.
    assert_eq!(json["max_concurrent_requests"], 2);
    assert_eq!(json["pagoda"]["summary"]["max_concurrent_requests"], 3);
    // Per request, ordered by index: the failed one has zeros and its error.
    assert_eq!(json["output_lens"], serde_json::json!([2, 3, 0]));
    assert_eq!(json["latencies"], serde_json::json!([1.25, 1.0, 0]));
    assert_eq!(json["ttfts"], serde_json::json!([0.5, 0.25, 0.0]));
    assert_eq!(json["itls"], serde_json::json!([[0.25], [0.25, 0.25], []]));
    assert_eq!(
        json["errors"],
        serde_json::json!(["", "", "failed on purpose"])
    );
    assert_eq!(
        json["generated_texts"],
        serde_json::json!(["four five", "one two three", ""])
    );
    // TTFT samples 250 and 500 ms.
    assert_eq!(json["mean_ttft_ms"], 375.0);
    assert_eq!(json["p99_ttft_ms"], 497.5);
    // Default percentile metrics (vLLM's): no e2el keys.
    assert!(json.get("mean_e2el_ms").is_none());
}

#[test]
fn detail_goodput_and_ramp_up_are_optional() {
    let options = SummaryOptions {
        goodput: parse_goodput(&["ttft:300".to_string()]).expect("valid"),
        ..SummaryOptions::default()
    };
    let summary = summarize(&records(), &options);
    let mut ramped = meta();
    ramped.request_rate = Some(4.5);
    ramped.ramp_up = Some(RampUp {
        strategy: "linear".into(),
        start_rps: 1.0,
        end_rps: 8.0,
    });
    let json = vllm_result_json(&summary, &records(), &ramped, false).expect("builds");
    for key in VLLM_DETAILED_KEYS {
        assert!(json.get(*key).is_none(), "{key} without --save-detailed");
    }
    for key in VLLM_PER_REQUEST_KEYS {
        let column = json[*key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} always written"));
        assert_eq!(column.len(), records().len(), "{key}");
    }
    for key in VLLM_RAMP_UP_KEYS {
        assert!(json.get(*key).is_some(), "{key} missing");
    }
    assert_eq!(json["request_rate"], 4.5);
    // One good request (TTFT 250 ms) over 1.25 s.
    assert_eq!(json["request_goodput"], 0.8);
}

#[test]
fn pagoda_section_holds_the_summary_run_and_definitions() {
    let records = varied_run(60);
    let summary = summarize(&records, &SummaryOptions::default());
    let json = vllm_result_json(&summary, &records, &meta(), false).expect("builds");
    let pagoda = &json[PAGODA_KEY];
    assert_eq!(pagoda["schema_version"], PAGODA_SCHEMA_VERSION);
    let back: BenchSummary =
        serde_json::from_value(pagoda["summary"].clone()).expect("summary round-trips");
    assert_eq!(back, summary);
    let run: RunMetadata = serde_json::from_value(pagoda["run"].clone()).expect("run round-trips");
    assert_eq!(run, meta());
    assert_eq!(pagoda["run"]["structured_output"]["mode"], "json_schema");
    // Results saved before `structured_output` existed still read, as free text.
    let mut older = pagoda["run"].clone();
    older
        .as_object_mut()
        .map(|run| run.remove("structured_output"));
    let older: RunMetadata = serde_json::from_value(older).expect("an older run reads");
    assert_eq!(older.structured_output, None);
    assert_eq!(
        pagoda["definitions"].as_object().map(|d| d.len()),
        Some(DEFINITIONS.len())
    );
    let sources = &pagoda["summary"]["token_count_sources"];
    assert!(sources["num_tokenizer"].as_u64() > Some(0));
}

#[test]
fn the_per_model_breakdown_is_saved_and_older_summaries_read() {
    let records = varied_run(30);
    let summary = summarize(&records, &SummaryOptions::default());
    let json = vllm_result_json(&summary, &records, &meta(), false).expect("builds");
    // Every hand-built record names `base`: one model, whose counts are the run's.
    let base = &json[PAGODA_KEY]["summary"]["per_model"]["base"];
    assert_eq!(base["num_completed"], summary.num_completed);
    assert_eq!(base["num_failed"], summary.num_failed);
    let mut older = json[PAGODA_KEY]["summary"].clone();
    older.as_object_mut().map(|s| s.remove("per_model"));
    let older: BenchSummary = serde_json::from_value(older).expect("an older summary reads");
    assert!(older.per_model.is_empty());
}

#[test]
fn the_lora_flags_are_saved_and_older_runs_read() {
    let records = varied_run(3);
    let summary = summarize(&records, &SummaryOptions::default());
    let json = vllm_result_json(&summary, &records, &meta(), false).expect("builds");
    let run = &json[PAGODA_KEY]["run"];
    assert_eq!(run["lora"]["modules"][1], "chat-lora");
    assert_eq!(run["lora"]["assignment"], "round-robin");
    let mut older = run.clone();
    older.as_object_mut().map(|run| run.remove("lora"));
    let older: RunMetadata = serde_json::from_value(older).expect("a run before LoRA reads");
    assert_eq!(older.lora, None);
}

#[test]
fn percentile_keys_format_like_python() {
    assert_eq!(percentile_key(99.0, "ttft"), "p99_ttft_ms");
    assert_eq!(percentile_key(99.9, "ttft"), "p99.9_ttft_ms");
    assert_eq!(percentile_key(50.0, "itl"), "p50_itl_ms");
    assert_eq!(percentile_key(0.0, "e2el"), "p0_e2el_ms");
    assert_eq!(percentile_key(100.0, "e2el"), "p100_e2el_ms");
    assert_eq!(percentile_key(99.99, "tpot"), "p99.99_tpot_ms");
    assert_eq!(percentile_key(33.3, "tpot"), "p33.3_tpot_ms");
}
