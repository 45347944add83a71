use futures_util::StreamExt;

use super::*;
use crate::openai::wire::responses_events::{OutputTextDeltaEvent, OutputTextDeltaType};

fn event(n: u64) -> ResponseStreamEvent {
    ResponseStreamEvent::OutputTextDelta(OutputTextDeltaEvent {
        item_id: "msg_1".into(),
        output_index: 0,
        content_index: 0,
        delta: "x".into(),
        logprobs: Vec::new(),
        kind: OutputTextDeltaType::OutputTextDelta,
        sequence_number: n,
    })
}

fn numbers(events: &[ResponseStreamEvent]) -> Vec<u64> {
    let number = |event: &ResponseStreamEvent| match event {
        ResponseStreamEvent::OutputTextDelta(delta) => delta.sequence_number,
        other => panic!("not a test event: {other:?}"),
    };
    events.iter().map(number).collect()
}

#[tokio::test]
async fn a_follower_gets_the_events_after_its_point_then_new_ones_until_the_end() {
    let runs = BackgroundRuns::default();
    let run = runs.register("resp_a");
    for n in 0..3 {
        run.push(event(n));
    }
    let all = tokio::spawn(Arc::clone(&run).follow(None).collect::<Vec<_>>());
    let after_1 = tokio::spawn(Arc::clone(&run).follow(Some(1)).collect::<Vec<_>>());
    tokio::task::yield_now().await;
    run.push(event(3));
    run.push(event(4));
    let num_bytes = run.finish();
    assert!(num_bytes > 0);
    assert_eq!(numbers(&all.await.expect("follower")), [0, 1, 2, 3, 4]);
    assert_eq!(numbers(&after_1.await.expect("follower")), [2, 3, 4]);
    // A follower that starts after the end replays, and one past the last event gets nothing.
    let late: Vec<ResponseStreamEvent> = Arc::clone(&run).follow(Some(2)).collect().await;
    assert_eq!(numbers(&late), [3, 4]);
    let past: Vec<ResponseStreamEvent> = Arc::clone(&run).follow(Some(u64::MAX)).collect().await;
    assert!(past.is_empty());
}

#[tokio::test]
async fn waiting_for_the_end_returns_once_the_run_has_finished() {
    let runs = BackgroundRuns::default();
    let run = runs.register("resp_w");
    let waiter = tokio::spawn({
        let run = Arc::clone(&run);
        async move { run.wait_finished().await }
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    run.push(event(0));
    run.finish();
    waiter.await.expect("the wait ends");
    assert!(run.is_finished());
}

#[test]
fn finished_logs_are_dropped_oldest_first_past_the_count_or_the_bytes() {
    let runs = BackgroundRuns::new(2, usize::MAX);
    for id in ["a", "b", "c"] {
        let run = runs.register(id);
        run.push(event(0));
        let num_bytes = run.finish();
        runs.finished(id.to_string(), num_bytes);
    }
    assert!(runs.get("a").is_none());
    assert!(runs.get("b").is_some() && runs.get("c").is_some());

    let size = serde_json::to_vec(&event(0)).expect("serializes").len();
    let runs = BackgroundRuns::new(100, 2 * size);
    let running = runs.register("running");
    running.push(event(0));
    for id in ["x", "y", "z"] {
        let run = runs.register(id);
        run.push(event(0));
        let num_bytes = run.finish();
        runs.finished(id.to_string(), num_bytes);
    }
    assert!(runs.get("x").is_none(), "past the byte budget");
    assert!(runs.get("y").is_some() && runs.get("z").is_some());
    assert!(
        runs.get("running").is_some(),
        "a running log is always kept"
    );
    // A forgotten run's log is gone and its bytes freed.
    runs.forget("y");
    assert!(runs.get("y").is_none());
    let run = runs.register("w");
    run.push(event(0));
    let num_bytes = run.finish();
    runs.finished("w".into(), num_bytes);
    assert!(runs.get("z").is_some() && runs.get("w").is_some());
}
