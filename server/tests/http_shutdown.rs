//! `pagoda-server` on SIGTERM, driven over HTTP: in-flight streams finish within
//! `--shutdown-timeout` (or end with `abort` past it), new requests are refused, and the process
//! exits 0. The mock engine runs (`--mock`: the real scheduler, no model compute).

mod common;

use std::time::{Duration, Instant};

use common::api::{chat_body, client, summarize, within, Reply, SseReader};
use common::bad_inputs::{self, CHAT};
use common::server::{send_sigterm, ServerProcess};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_stream_in_flight_finish_then_exits_0() {
    let mut server =
        ServerProcess::start(&["--mock", "--mock-tpot-ms", "20", "--shutdown-timeout", "10"]);
    let client = client();
    let mut body = chat_body("finish me", 50, true);
    body["stream_options"] = json!({"include_usage": true});
    let response = client
        .post(server.url(CHAT))
        .json(&body)
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let mut payloads = Vec::new();
    for _ in 0..5 {
        payloads.push(
            reader
                .next_data()
                .await
                .expect("a chunk")
                .expect("not the end"),
        );
    }
    send_sigterm(server.pid());
    let drained = tokio::task::block_in_place(|| {
        server.wait_for_log("shutdown requested", Duration::from_secs(5))
    });
    assert!(
        drained.is_some(),
        "the server did not log the shutdown request"
    );

    // A new connection: refused, or answered 503.
    let late = reqwest::Client::new()
        .post(server.url(CHAT))
        .json(&bad_inputs::valid_chat())
        .send();
    let late = within(Duration::from_secs(5), "a request after SIGTERM", late).await;
    if let Ok(late) = late {
        let late = Reply::read(late).await;
        assert_eq!(
            late.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            late.text()
        );
        late.expect_openai_error();
    }

    let rest = within(
        Duration::from_secs(10),
        "the stream in flight",
        reader.rest(),
    )
    .await;
    payloads.extend(rest.expect("the stream in flight is not cut"));
    let summary = summarize(&payloads);
    assert_eq!(summary.finish_reasons, ["length"], "{summary:?}");
    assert!(
        summary.errors.is_empty() && summary.ended_with_done,
        "{summary:?}"
    );
    assert_eq!(summary.usage.expect("usage")["completion_tokens"], 50);
    let code = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(10)));
    assert_eq!(code, Some(0), "exit code after a graceful shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_past_the_shutdown_timeout_aborts_the_stream_and_exits_0() {
    let mut server = ServerProcess::start(&[
        "--mock",
        "--mock-tpot-ms",
        "20",
        "--shutdown-timeout",
        "0.5",
    ]);
    let client = client();
    // 5000 tokens at 20 ms: 100 s, far past the deadline (the mock's max_model_len is 8192).
    let response = client
        .post(server.url(CHAT))
        .json(&chat_body("never finishes", 5000, true))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let mut payloads = Vec::new();
    for _ in 0..3 {
        payloads.push(
            reader
                .next_data()
                .await
                .expect("a chunk")
                .expect("not the end"),
        );
    }
    let signalled = Instant::now();
    send_sigterm(server.pid());
    let rest = within(
        Duration::from_secs(5),
        "the aborted stream's end",
        reader.rest(),
    )
    .await;
    payloads.extend(rest.expect("the stream ends cleanly, not with a broken connection"));
    let summary = summarize(&payloads);
    assert!(
        summary.ended_with_done,
        "the stream ends with [DONE]: {summary:?}"
    );
    let aborted = summary.finish_reasons == ["abort"] || !summary.errors.is_empty();
    assert!(
        aborted,
        "finish_reason abort or an error event: {summary:?}"
    );
    assert!(summary.num_content_chunks < 5000, "{summary:?}");
    let code = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(5)));
    assert_eq!(code, Some(0), "exit code after the shutdown deadline");
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "took {:?}",
        signalled.elapsed()
    );
}
