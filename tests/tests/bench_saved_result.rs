//! The saved result of a fixed run, held to a checked-in file: `pagoda-bench serve` against
//! `pagoda-server --mock`, with a fixed seed (the same prompts, lengths and arrival times every
//! time), saves a result whose key set (every key path, arrays' elements merged as `[]`) and
//! whose deterministic fields (counts, token totals, the configuration it echoes, each request's
//! lengths and due time) must equal `tests/tests/data/bench_saved_result.json`. Timings are not
//! compared. A refactor that adds, drops or renames a key, or changes what is counted, fails here.
//!
//! To regenerate the file after a change meant to alter the output, run
//!
//! ```text
//! PAGODA_BLESS=1 cargo test -p pagoda-e2e --test bench_saved_result
//! ```
//!
//! then read `git diff tests/tests/data/bench_saved_result.json` and commit it with the change.

use std::collections::BTreeSet;
use std::path::PathBuf;

use pagoda_e2e::bench::{read_json, run_bench_ok, serve_against_mock};
use pagoda_e2e::server::ServerProcess;
use serde_json::{json, Map, Value};

/// The run: a seeded random workload (lengths drawn with a range ratio) at a seeded Poisson rate,
/// with a concurrency limit it never reaches, and every optional part of the result that needs no
/// extra server (detailed arrays, several percentiles and metrics, a label).
const FLAGS: &[&str] = &[
    "--seed",
    "7",
    "--num-prompts",
    "12",
    "--request-rate",
    "20",
    "--max-concurrency",
    "4",
    "--random-input-len",
    "24",
    "--random-output-len",
    "8",
    "--random-range-ratio",
    "0.5",
    "--label",
    "saved-result",
    "--metric-percentiles",
    "50,99",
    "--percentile-metrics",
    "ttft,tpot,itl,e2el",
    "--save-detailed",
];

/// The fields compared by value (JSON pointers): what the flags and the seed fix.
const DETERMINISTIC: &[&str] = &[
    "/endpoint_type",
    "/backend",
    "/label",
    "/model_id",
    "/num_prompts",
    "/request_rate",
    "/burstiness",
    "/max_concurrency",
    "/completed",
    "/failed",
    "/total_input_tokens",
    "/total_output_tokens",
    "/request_goodput",
    "/rtfx",
    "/input_lens",
    "/output_lens",
    "/errors",
    "/pagoda/schema_version",
    "/pagoda/run/endpoint",
    "/pagoda/run/dataset_name",
    "/pagoda/run/seed",
    "/pagoda/run/label",
    "/pagoda/run/num_prompts",
    "/pagoda/run/request_rate",
    "/pagoda/run/burstiness",
    "/pagoda/run/max_concurrency",
    "/pagoda/run/ramp_up",
    "/pagoda/run/structured_output",
    "/pagoda/run/lora",
    "/pagoda/run/num_clients",
    "/pagoda/summary/num_requests",
    "/pagoda/summary/num_completed",
    "/pagoda/summary/num_failed",
    "/pagoda/summary/errors_by_kind",
    "/pagoda/summary/total_input_tokens",
    "/pagoda/summary/total_output_tokens",
    "/pagoda/summary/token_count_sources",
    "/pagoda/summary/percentiles",
    "/pagoda/summary/percentile_metrics",
    "/pagoda/summary/goodput",
    "/pagoda/summary/integrity/configured_rate",
    "/pagoda/summary/integrity/thresholds",
    "/pagoda/summary/integrity/notes",
    "/pagoda/summary/per_model/mock/num_completed",
    "/pagoda/summary/per_model/mock/num_failed",
    "/pagoda/summary/per_model/mock/total_output_tokens",
    "/pagoda/client/max_concurrency",
];

/// The fields of each `pagoda.records` entry compared by value (`target_send_s` to the
/// nanosecond: the seeded schedule).
const RECORD_FIELDS: &[&str] = &[
    "index",
    "client_id",
    "model",
    "input_tokens",
    "output_tokens",
    "expected_output_tokens",
    "token_count_source",
    "error",
];

fn expected_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/bench_saved_result.json")
}

/// Every key path of `value` below `prefix`: `/a/b` for objects, `/a/[]/b` for what the elements
/// of array `a` hold (all elements merged).
fn key_paths(value: &Value, prefix: &str, paths: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let path = format!("{prefix}/{key}");
                paths.insert(path.clone());
                key_paths(child, &path, paths);
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}/[]"), paths);
            }
        }
        _ => {}
    }
}

/// What of `result` the test compares: its key paths, the [`DETERMINISTIC`] fields and each
/// record's [`RECORD_FIELDS`].
fn deterministic_view(result: &Value) -> Value {
    let mut keys = BTreeSet::new();
    key_paths(result, "", &mut keys);
    let values: Map<String, Value> = DETERMINISTIC
        .iter()
        .map(|&pointer| {
            let value = result.pointer(pointer).cloned();
            (pointer.to_string(), value.unwrap_or(json!("<missing>")))
        })
        .collect();
    let records = result
        .pointer("/pagoda/records")
        .and_then(Value::as_array)
        .map(|records| records.iter().map(record_view).collect::<Vec<_>>())
        .unwrap_or_default();
    json!({"keys": keys, "values": values, "records": records})
}

fn record_view(record: &Value) -> Value {
    let mut view: Map<String, Value> = RECORD_FIELDS
        .iter()
        .map(|&field| (field.to_string(), record[field].clone()))
        .collect();
    let due_ns = record["target_send_s"].as_f64().map(|s| (s * 1e9).round());
    view.insert("target_send_ns".into(), json!(due_ns));
    Value::Object(view)
}

/// The entries of two objects (or of two arrays, by index) that differ, as `name: now ≠ before`.
fn differences(now: &Value, before: &Value) -> Vec<String> {
    let entries = |view: &Value| -> Map<String, Value> {
        match view {
            Value::Object(map) => map.clone(),
            Value::Array(items) => (items.iter().enumerate())
                .map(|(i, item)| (i.to_string(), item.clone()))
                .collect(),
            _ => Map::new(),
        }
    };
    let (now, before) = (entries(now), entries(before));
    let names: BTreeSet<&String> = now.keys().chain(before.keys()).collect();
    let missing = json!("<none>");
    names
        .into_iter()
        .filter_map(|name| {
            let (a, b) = (
                now.get(name).unwrap_or(&missing),
                before.get(name).unwrap_or(&missing),
            );
            (a != b).then(|| format!("{name}: {a} ≠ {b}"))
        })
        .collect()
}

/// Fails with what differs: keys gained and lost, then each differing field and record.
fn assert_same(actual: &Value, expected: &Value) {
    let mut problems = Vec::new();
    let keys = |view: &Value| -> BTreeSet<String> {
        let list = view["keys"].as_array().cloned().unwrap_or_default();
        list.iter()
            .filter_map(|k| k.as_str().map(String::from))
            .collect()
    };
    let (now, before) = (keys(actual), keys(expected));
    let gained: Vec<_> = now.difference(&before).collect();
    let lost: Vec<_> = before.difference(&now).collect();
    if !gained.is_empty() || !lost.is_empty() {
        problems.push(format!("keys gained {gained:?}, lost {lost:?}"));
    }
    for part in ["values", "records"] {
        for difference in differences(&actual[part], &expected[part]) {
            problems.push(format!("{part} {difference} (now ≠ before)"));
        }
    }
    assert!(
        problems.is_empty(),
        "the saved result changed (PAGODA_BLESS=1 regenerates {}):\n{}",
        expected_path().display(),
        problems.join("\n")
    );
}

#[test]
fn a_fixed_seed_run_saves_the_expected_result() {
    let server = ServerProcess::start_mock("5", "2");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let mut args = serve_against_mock(&server.base_url);
    args.extend(FLAGS.iter().map(|f| f.to_string()));
    args.extend(
        [
            "--save-result",
            "--result-dir",
            &out,
            "--result-filename",
            "r.json",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_bench_ok(&args);
    let view = deterministic_view(&read_json(&dir.path().join("r.json")));
    if std::env::var_os("PAGODA_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&view).expect("JSON") + "\n";
        std::fs::write(expected_path(), text).expect("writes the expected file");
        eprintln!("wrote {}", expected_path().display());
        return;
    }
    assert_same(&view, &read_json(&expected_path()));
}
