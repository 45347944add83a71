//! Closed-loop conversations against the recording server, over HTTP: what each turn carried
//! and when it arrived is checked on the server's side.

use std::collections::BTreeMap;
use std::time::Duration;

use super::recording_server::{Arrival, RecordingServer};
use super::*;
use crate::client::{Endpoint, RequestConfig};
use crate::record::RequestRecord;
use crate::runner::test_server::SERIAL;
use crate::workload::{Message, Prompt};

const THINK: Duration = Duration::from_millis(60);
const SERVER_DELAY: Duration = Duration::from_millis(40);

/// `num_conversations` conversations of `num_turns` user messages `c<id>-t<turn>`, interleaved
/// as a dataset may give them.
fn turn_specs(num_conversations: usize, num_turns: usize) -> Vec<RequestSpec> {
    let mut specs = Vec::new();
    for turn in 0..num_turns {
        for id in 0..num_conversations {
            specs.push(RequestSpec {
                prompt: Prompt::Messages(vec![Message {
                    role: "user".into(),
                    content: format!("c{id}-t{turn}"),
                }]),
                input_tokens: 4,
                output_tokens: 3,
                conversation: Some((id, turn)),
                model: None,
            });
        }
    }
    specs
}

fn run_config(base_url: &str, max_concurrency: Option<usize>) -> RunConfig {
    let mut request = RequestConfig::new(Endpoint::Chat, base_url, "m");
    request.timeout = Duration::from_secs(30);
    let mut config = RunConfig::new(request);
    config.max_concurrency = max_concurrency;
    config
}

fn conversation_config(think_time: Duration) -> ConversationConfig {
    ConversationConfig {
        think_time,
        session_header: Some("X-Session-ID".into()),
        session_prefix: "conv-7".into(),
    }
}

/// The server's arrivals by session header, each conversation's in arrival order.
fn by_session(arrivals: &[Arrival]) -> BTreeMap<String, Vec<Arrival>> {
    let mut sessions: BTreeMap<String, Vec<Arrival>> = BTreeMap::new();
    for arrival in arrivals {
        let session = arrival.header("x-session-id").expect("a session header");
        sessions
            .entry(session.to_string())
            .or_default()
            .push(arrival.clone());
    }
    sessions
}

/// The most sessions active at once: a session is active from its first request's arrival to
/// its last response.
fn max_overlapping_sessions(sessions: &BTreeMap<String, Vec<Arrival>>) -> usize {
    let mut events: Vec<(std::time::Instant, i32)> = Vec::new();
    for turns in sessions.values() {
        let last = turns.last().and_then(|a| a.answered).expect("answered");
        events.push((turns[0].arrived, 1));
        events.push((last, -1));
    }
    // Ends before starts at the same instant.
    events.sort();
    let mut active = 0;
    let mut peak = 0;
    for (_, change) in events {
        active += change;
        peak = peak.max(active);
    }
    peak as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_wait_for_the_previous_reply_and_the_think_time() {
    let _serial = SERIAL.lock().await;
    let server = RecordingServer::start(SERVER_DELAY, None).await;
    let config = run_config(&server.base_url, Some(2));
    let outcome = run_conversations(
        &turn_specs(3, 4),
        &[0.0; 3],
        &config,
        &conversation_config(THINK),
    )
    .await
    .expect("runs");

    let sessions = by_session(&server.arrivals());
    assert_eq!(sessions.len(), 3, "one session per conversation");
    for (session, turns) in &sessions {
        let id: usize = session.strip_prefix("conv-7-").unwrap().parse().unwrap();
        assert_eq!(turns.len(), 4, "{session}");
        let mut expected: Vec<String> = Vec::new();
        for (t, turn) in turns.iter().enumerate() {
            expected.push(format!("c{id}-t{t}"));
            assert_eq!(turn.contents(), expected, "{session} turn {t}: its history");
            expected.push(turn.reply.clone());
            if t > 0 {
                let previous_end = turns[t - 1].answered.unwrap();
                let gap = turn.arrived.duration_since(previous_end);
                // The server stamps its end just after writing it, a moment after the client
                // may have read it: 1 ms of slack.
                assert!(
                    gap + Duration::from_millis(1) >= THINK,
                    "{session} turn {t} arrived {gap:?} after turn {} ended",
                    t - 1
                );
            }
        }
    }
    assert_eq!(
        max_overlapping_sessions(&sessions),
        2,
        "2 conversations at once"
    );
    assert!(server.peak_in_flight() <= 2);

    let summary = outcome
        .conversations
        .as_ref()
        .expect("a conversation summary");
    assert_eq!(
        (
            summary.num_started,
            summary.num_completed,
            summary.num_turns_sent
        ),
        (3, 3, 12)
    );
    assert_eq!(summary.session_header.as_deref(), Some("X-Session-ID"));
    assert_eq!(outcome.num_not_sent, 0);
    check_records(&outcome.records);
}

/// Every turn's record: its conversation and turn, the server's prompt length, and for later
/// turns a target time of the previous end plus the think time.
fn check_records(records: &[RequestRecord]) {
    assert_eq!(records.len(), 12);
    let mut by_conversation: BTreeMap<usize, Vec<&RequestRecord>> = BTreeMap::new();
    for record in records {
        assert!(record.is_success(), "{record:?}");
        assert_eq!(record.input_tokens % 10, 0, "the server's usage");
        let (id, _) = record.conversation.expect("a turn");
        by_conversation.entry(id).or_default().push(record);
    }
    for turns in by_conversation.values() {
        for (t, record) in turns.iter().enumerate() {
            assert_eq!(record.conversation.unwrap().1, t);
            assert_eq!(record.index, turns[0].index + t, "turns numbered in order");
            if t > 0 {
                let due = turns[t - 1].end_s + THINK.as_secs_f64();
                assert!((record.target_send_s - due).abs() < 1e-9);
                assert!(record.actual_send_s >= due);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_ends_its_conversation() {
    let _serial = SERIAL.lock().await;
    // Request 1 is the second turn of the only conversation.
    let server = RecordingServer::start(Duration::from_millis(5), Some(1)).await;
    let config = run_config(&server.base_url, None);
    let outcome = run_conversations(
        &turn_specs(1, 3),
        &[0.0],
        &config,
        &conversation_config(Duration::ZERO),
    )
    .await
    .expect("runs");
    assert_eq!(server.arrivals().len(), 2, "the third turn is never sent");
    assert_eq!(outcome.records.len(), 2);
    assert!(!outcome.records[1].is_success());
    assert_eq!((outcome.num_scheduled, outcome.num_not_sent), (3, 1));
    let summary = outcome.conversations.unwrap();
    assert_eq!((summary.num_failed, summary.num_completed), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_turn_is_sent_after_the_duration_and_conversations_are_cycled() {
    let _serial = SERIAL.lock().await;
    let server = RecordingServer::start(Duration::from_millis(5), None).await;
    let mut config = run_config(&server.base_url, None);
    config.max_duration = Some(Duration::from_millis(300));
    // 2 conversations in the workload, 3 starts: the first is run again as conversation 2.
    let outcome = run_conversations(
        &turn_specs(2, 2),
        &[0.0, 0.0, 0.0],
        &config,
        &conversation_config(Duration::from_millis(500)),
    )
    .await
    .expect("runs");
    let arrivals = server.arrivals();
    assert_eq!(
        arrivals.len(),
        3,
        "first turns only: the second falls due after 300 ms"
    );
    let mut firsts: Vec<Vec<String>> = arrivals.iter().map(Arrival::contents).collect();
    firsts.sort();
    assert_eq!(firsts, [["c0-t0"], ["c0-t0"], ["c1-t0"]]);
    let summary = outcome.conversations.unwrap();
    assert_eq!((summary.num_cut_short, summary.num_turns_sent), (3, 3));
    assert_eq!((outcome.num_scheduled, outcome.num_not_sent), (6, 3));
}
