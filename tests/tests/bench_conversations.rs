//! `pagoda-bench serve` with closed-loop conversations against the real `pagoda-server` (mock
//! engine), over HTTP: the binary's flags, the per-turn report and result keys, and the records'
//! timing (each turn after the previous one's end plus the think time; no more conversations at
//! once than `--max-concurrency`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use pagoda_e2e::bench::{number, read_json, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::default_model;
use serde_json::Value;

const THINK_TIME_S: f64 = 0.1;

fn mock_server() -> ServerProcess {
    ensure_built();
    ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "30",
        "--mock-tpot-ms",
        "5",
        "--disable-log-requests",
    ])
}

/// Runs `serve` with `extra` and returns its result (saved with `--save-detailed`).
fn serve(server: &ServerProcess, extra: &[&str]) -> (Value, String) {
    let model = default_model().display().to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let mut args = vec![
        "serve",
        "--base-url",
        &server.base_url,
        "--tokenizer",
        &model,
        "--model",
        "mock",
        "--disable-progress",
        "--save-detailed",
        "--result-dir",
        &out,
        "--result-filename",
        "conversations.json",
    ];
    args.extend_from_slice(extra);
    let output = run_bench_ok(&args);
    let result = read_json(&dir.path().join("conversations.json"));
    (result, String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `(conversation id, turn) → (send, end)` of every record.
fn turns(result: &Value) -> BTreeMap<(u64, u64), (f64, f64)> {
    let records = result
        .pointer("/pagoda/records")
        .and_then(Value::as_array)
        .expect("records");
    records
        .iter()
        .map(|r| {
            let ids = r["conversation"].as_array().expect("a conversation");
            let key = (ids[0].as_u64().unwrap_or(0), ids[1].as_u64().unwrap_or(0));
            let times = (
                r["actual_send_s"].as_f64().unwrap_or(0.0),
                r["end_s"].as_f64().unwrap_or(0.0),
            );
            (key, times)
        })
        .collect()
}

#[test]
fn synthetic_conversations_run_turn_after_turn_within_the_concurrency() {
    let server = mock_server();
    let (result, stdout) = serve(
        &server,
        &[
            "--dataset-name",
            "conversation",
            "--num-prompts",
            "6",
            "--num-turns",
            "3",
            "--turn-input-len",
            "40",
            "--turn-output-len",
            "8",
            "--think-time",
            "100",
            "--max-concurrency",
            "2",
            "--session-header",
            "X-Session-ID",
        ],
    );
    assert_eq!(
        number(&result, "completed"),
        18.0,
        "6 conversations × 3 turns"
    );
    assert!(stdout.contains("Per turn (conversations)"), "{stdout}");
    let summary = result
        .pointer("/pagoda/conversations")
        .expect("conversations");
    assert_eq!(summary["num_completed"], 6);
    assert_eq!(summary["session_header"], "X-Session-ID");
    let per_turn = result
        .pointer("/pagoda/turns")
        .and_then(Value::as_array)
        .expect("turns");
    assert_eq!(per_turn.len(), 3);
    let prompt_tokens: Vec<f64> = per_turn
        .iter()
        .map(|t| t["mean_input_tokens"].as_f64().expect("a number"))
        .collect();
    assert!(
        prompt_tokens.windows(2).all(|w| w[1] > w[0]),
        "the context grows turn by turn: {prompt_tokens:?}"
    );
    let turns = turns(&result);
    for (&(id, turn), &(send_s, _)) in &turns {
        if turn > 0 {
            let (_, previous_end_s) = turns[&(id, turn - 1)];
            assert!(
                send_s >= previous_end_s + THINK_TIME_S,
                "conversation {id} turn {turn} sent {send_s}, previous ended {previous_end_s}"
            );
        }
    }
    assert!(max_conversations_at_once(&turns) <= 2);
}

/// The most conversations between their first send and their last end at once.
fn max_conversations_at_once(turns: &BTreeMap<(u64, u64), (f64, f64)>) -> usize {
    let mut spans: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for (&(id, _), &(send_s, end_s)) in turns {
        let span = spans.entry(id).or_insert((send_s, end_s));
        *span = (span.0.min(send_s), span.1.max(end_s));
    }
    let mut events: Vec<(f64, i32)> = spans
        .values()
        .flat_map(|&(a, b)| [(a, 1), (b, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut level, mut peak) = (0, 0);
    for (_, change) in events {
        level += change;
        peak = peak.max(level);
    }
    peak as usize
}

#[test]
fn sharegpt_multi_turn_replays_whole_conversations() {
    let server = mock_server();
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bench-client/tests/data/sharegpt_sample.json")
        .display()
        .to_string();
    let (result, _) = serve(
        &server,
        &[
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            &sample,
            "--multi-turn",
            "--num-prompts",
            "3",
            "--output-len",
            "6",
        ],
    );
    let summary = result
        .pointer("/pagoda/conversations")
        .expect("conversations");
    assert_eq!(summary["num_conversations"], 3);
    assert_eq!(summary["num_completed"], 3);
    let turns = turns(&result);
    let ids: std::collections::BTreeSet<u64> = turns.keys().map(|(id, _)| *id).collect();
    assert_eq!(ids.len(), 3, "3 conversations, whole");
    assert!(
        turns.keys().any(|(_, turn)| *turn > 0),
        "a conversation of several turns"
    );
}
