//! The engine progress watchdog over HTTP: while a (mock) engine step hangs with a request in
//! flight, `/health` turns 503 with the reason and `pagoda_engine_stalled` is 1; when the step
//! returns, `/health` is 200 again by itself, the request completes, and the stall was counted.

mod common;

use std::time::{Duration, Instant};

use common::api::{chat_body, client, get, scrape, summarize, within, SseReader};
use common::server::ServerProcess;
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_engine_turns_health_503_until_it_resumes() {
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-tpot-ms",
        "10",
        "--mock-stall-after-tokens",
        "3",
        "--mock-stall-ms",
        "4000",
        "--engine-stall-timeout",
        "1",
    ]);
    let client = client();
    assert_eq!(
        get(&client, &server.url("/health")).await.status,
        StatusCode::OK
    );
    let response = client
        .post(server.url("/v1/chat/completions"))
        .json(&chat_body("stall", 8, true))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);

    // The stall: 503 with the reason, within the timeout plus slack.
    let started = Instant::now();
    let stalled = loop {
        let reply = get(&client, &server.url("/health")).await;
        if reply.status == StatusCode::SERVICE_UNAVAILABLE {
            break reply;
        }
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "/health never turned 503 during a 4 s stall"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let error = stalled.expect_openai_error();
    assert_eq!(error["code"], "engine_stalled", "{error}");
    assert!(error["message"]
        .as_str()
        .unwrap_or("")
        .contains("--engine-stall-timeout"));
    let during = scrape(&client, &server).await;
    assert_eq!(during.sum("pagoda_engine_stalled", &[]), 1.0);

    // The recovery: the request finishes and /health is 200 again without anyone's help.
    let rest = within(Duration::from_secs(15), "the stalled stream", stream.rest()).await;
    let summary = summarize(&rest.expect("the stream resumes"));
    assert!(
        summary.ended_with_done && summary.errors.is_empty(),
        "{summary:?}"
    );
    assert_eq!(summary.finish_reasons, ["length"], "{summary:?}");
    let recovered = within(Duration::from_secs(5), "recovery", async {
        loop {
            if get(&client, &server.url("/health")).await.status == StatusCode::OK {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    recovered.await;
    let after = scrape(&client, &server).await;
    assert_eq!(after.sum("pagoda_engine_stalled", &[]), 0.0);
    assert_eq!(after.sum("pagoda_engine_stalls_total", &[]), 1.0);
    let logs = server.drain_logs().join("\n");
    assert!(logs.contains("engine stalled"), "an error line says so");
}
