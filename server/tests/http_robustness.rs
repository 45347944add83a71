//! `pagoda-server` under bad input, overload and disconnects, driven over HTTP as a
//! client would: every error is OpenAI-shaped, nothing leaks (KV blocks, running or waiting
//! sequences), and the server keeps serving afterwards.
//!
//! Most tests run the mock engine (`--mock`: the real scheduler, no model compute, one token per
//! byte); `bad_inputs_on_the_default_model` runs the default model.
//!
//! SSE keep-alive comments are tested in `http_features.rs` (with a short `--sse-keep-alive`),
//! SIGTERM draining in `http_shutdown.rs`.

mod common;

use std::time::{Duration, Instant};

use common::api::{
    brief, chat_body, client, engine_idle, get, poll_metrics, post_json, scrape, summarize,
    wait_for_metrics, within, Reply, SseReader,
};
use common::bad_inputs::{self, Case, CHAT};
use common::server::ServerProcess;
use futures_util::future::join_all;
use pagoda_server::mock_text::BYTE_TOKENIZER_VOCAB_SIZE;
use reqwest::StatusCode;
use serde_json::json;

/// How long the engine may take to settle after its last request ends.
const SETTLE: Duration = Duration::from_secs(5);

/// A normal chat request gets a normal answer: `max_tokens` tokens, finish reason `length`.
async fn assert_serves_normally(client: &reqwest::Client, server: &ServerProcess) {
    let reply = post_json(
        client,
        &server.url(CHAT),
        &chat_body("Still there?", 6, false),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["choices"][0]["finish_reason"], "length", "{body}");
    assert_eq!(body["usage"]["completion_tokens"], 6, "{body}");
    let content = body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("");
    assert!(!content.is_empty(), "{body}");
}

#[tokio::test]
async fn bad_inputs_get_openai_errors_and_leave_the_server_idle() {
    let max_model_len = 256;
    let server = ServerProcess::start(&[
        "--mock",
        "--max-model-len",
        &max_model_len.to_string(),
        "--max-request-body-bytes",
        "4096",
    ]);
    let client = client();
    let mut cases = bad_inputs::corpus(BYTE_TOKENIZER_VOCAB_SIZE as u32);
    cases.extend(bad_inputs::huge_prompt_cases(max_model_len));
    let oversized = json!({"messages": [{"role": "user", "content": "x".repeat(10_000)}]});
    cases.push(Case::json(
        "oversized body (10 KB > 4096 B)",
        CHAT,
        oversized,
        413,
        None,
    ));
    let oversized = json!({"prompt": "y".repeat(10_000)});
    cases.push(Case::json(
        "oversized body on /tokenize",
        "/tokenize",
        oversized,
        413,
        None,
    ));
    let failures = bad_inputs::run(&client, &server.base_url, &cases).await;
    // Shown now, asserted last: the checks below must run whatever the corpus found.
    eprintln!("bad-input failures: {failures:#?}");

    assert_serves_normally(&client, &server).await;
    let scrape = wait_for_metrics(&client, &server, SETTLE, |s| engine_idle(s, "pagoda")).await;
    assert_eq!(scrape.value("pagoda:num_requests_running", &[]), 0.0);
    assert_eq!(scrape.value("pagoda:kv_cache_usage_perc", &[]), 0.0);
    bad_inputs::assert_all_passed(&failures, cases.len());
}

/// The huge prompt and a sample of the corpus against the real model and its tokenizer.
#[tokio::test]
async fn bad_inputs_on_the_default_model() {
    let model = common::model_path();
    let vocab_size = pagoda_text::tokenizer::TextTokenizer::from_gguf(&model)
        .expect("the default model's tokenizer loads")
        .vocab_size() as u32;
    let max_model_len = 256;
    let model_arg = model.display().to_string();
    let server = ServerProcess::start(&[
        "--model",
        &model_arg,
        "--max-model-len",
        &max_model_len.to_string(),
    ]);
    let client = client();
    let sample = [
        "malformed JSON",
        "truncated JSON",
        "invalid UTF-8 in a string",
        "temperature \"hot\"",
        "top_p 1.5",
        "n 1000",
        "max_tokens 0",
        "min_tokens > max_tokens",
        "empty messages",
        "image_url content part",
        "auto tools without --enable-auto-tool-choice",
        "unknown model (chat)",
        "empty prompt list",
        "token id beyond the vocabulary",
        "GET on chat completions",
    ];
    let mut cases: Vec<Case> = bad_inputs::corpus(vocab_size)
        .into_iter()
        .filter(|case| sample.contains(&case.name.as_str()))
        .collect();
    assert_eq!(
        cases.len(),
        sample.len(),
        "a sampled case is missing from the corpus"
    );
    cases.extend(bad_inputs::huge_prompt_cases(max_model_len));
    let failures = bad_inputs::run(&client, &server.base_url, &cases).await;
    eprintln!("bad-input failures: {failures:#?}");

    assert_serves_normally(&client, &server).await;
    wait_for_metrics(&client, &server, SETTLE, |s| engine_idle(s, "pagoda")).await;
    bad_inputs::assert_all_passed(&failures, cases.len());
}

#[tokio::test]
async fn api_key_guards_the_api_but_not_health_or_metrics() {
    let server = ServerProcess::start(&["--mock", "--api-key", "secret"]);
    let client = client();
    let chat = bad_inputs::valid_chat();
    let refused = [
        ("no key", None, CHAT),
        ("wrong key", Some(("authorization", "Bearer nope")), CHAT),
        (
            "key with a suffix",
            Some(("authorization", "Bearer secret2")),
            CHAT,
        ),
        ("wrong x-api-key", Some(("x-api-key", "secretx")), CHAT),
        ("no key, completions", None, "/v1/completions"),
        ("no key, tokenize", None, "/tokenize"),
    ];
    for (name, header, path) in refused {
        let mut request = client.post(server.url(path)).json(&chat);
        if let Some((key, value)) = header {
            request = request.header(key, value);
        }
        let reply = Reply::read(request.send().await.expect("answered")).await;
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "{name}: {}",
            reply.text()
        );
        assert_eq!(
            reply.expect_openai_error()["type"],
            "authentication_error",
            "{name}"
        );
    }
    let models = get(&client, &server.url("/v1/models")).await;
    assert_eq!(
        models.status,
        StatusCode::UNAUTHORIZED,
        "GET /v1/models without a key"
    );
    models.expect_openai_error();
    // The key is checked before the body is read.
    let malformed = client
        .post(server.url(CHAT))
        .body("{")
        .send()
        .await
        .expect("answered");
    assert_eq!(malformed.status(), StatusCode::UNAUTHORIZED);

    for open in ["/health", "/metrics", "/version"] {
        let reply = get(&client, &server.url(open)).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{open} must stay open without a key"
        );
    }
    for (key, value) in [("authorization", "Bearer secret"), ("x-api-key", "secret")] {
        let reply = client
            .post(server.url(CHAT))
            .header(key, value)
            .json(&chat)
            .send()
            .await;
        let reply = Reply::read(reply.expect("answered")).await;
        assert_eq!(reply.status, StatusCode::OK, "{key}: {}", reply.text());
        let models = client
            .get(server.url("/v1/models"))
            .header(key, value)
            .send()
            .await;
        assert_eq!(
            models.expect("answered").status(),
            StatusCode::OK,
            "{key} on /v1/models"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_refuses_with_429_and_retry_after() {
    let server = ServerProcess::start(&[
        "--mock",
        "--max-num-seqs",
        "2",
        "--max-waiting-requests",
        "2",
        "--mock-tpot-ms",
        "50",
    ]);
    let client = client();
    let max_tokens = 20;
    let mut body = chat_body("queue me", max_tokens, true);
    body["stream_options"] = json!({"include_usage": true});
    let requests = (0..12).map(|_| {
        let request = client.post(server.url(CHAT)).json(&body).send();
        async move {
            let response = request.await.expect("answered");
            if response.status() != StatusCode::OK {
                return Err(Reply::read(response).await);
            }
            Ok(SseReader::new(response).rest().await)
        }
    });
    let outcomes = within(Duration::from_secs(30), "12 requests", join_all(requests)).await;
    let (mut num_admitted, mut num_refused) = (0, 0);
    for outcome in outcomes {
        match outcome {
            Ok(stream) => {
                num_admitted += 1;
                let summary = summarize(&stream.expect("an admitted stream completes"));
                assert_eq!(summary.finish_reasons, ["length"], "{summary:?}");
                assert!(
                    summary.errors.is_empty() && summary.ended_with_done,
                    "{summary:?}"
                );
                let usage = summary.usage.expect("a usage chunk");
                assert_eq!(usage["completion_tokens"], max_tokens, "{usage}");
            }
            Err(reply) => {
                num_refused += 1;
                assert_eq!(
                    reply.status,
                    StatusCode::TOO_MANY_REQUESTS,
                    "{}",
                    reply.text()
                );
                let retry_after = reply
                    .header("retry-after")
                    .expect("429 carries Retry-After");
                assert!(
                    retry_after.parse::<u64>().is_ok(),
                    "Retry-After {retry_after:?}"
                );
                assert_eq!(reply.expect_openai_error()["type"], "rate_limit_error");
            }
        }
    }
    assert!(
        num_refused > 0,
        "no request was refused ({num_admitted} admitted)"
    );
    assert!(num_admitted >= 2, "only {num_admitted} admitted");
    wait_for_metrics(&client, &server, SETTLE, |s| engine_idle(s, "pagoda")).await;
    assert_serves_normally(&client, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_100_streams_frees_everything() {
    let server = ServerProcess::start(&["--mock", "--mock-tpot-ms", "20"]);
    let client = client();
    let aborted_before = scrape(&client, &server).await.value(
        "pagoda:request_success_total",
        &[("finished_reason", "abort")],
    );
    let num_streams = 100;
    let body = chat_body("a long answer, please", 1000, true);
    let started = (0..num_streams).map(|_| {
        let request = client.post(server.url(CHAT)).json(&body).send();
        async move {
            let response = request.await.expect("answered");
            assert_eq!(response.status(), StatusCode::OK);
            let mut reader = SseReader::new(response);
            for _ in 0..3 {
                let data = reader
                    .next_data()
                    .await
                    .expect("a chunk")
                    .expect("not the end");
                assert_ne!(data, "[DONE]");
            }
            reader
        }
    });
    let readers = within(
        Duration::from_secs(30),
        "100 streams start",
        join_all(started),
    )
    .await;
    let busy = scrape(&client, &server).await;
    assert!(
        busy.value("pagoda:num_requests_running", &[]) > 0.0
            && busy.value("pagoda:kv_cache_usage_perc", &[]) > 0.0,
        "the streams should be running:\n{}",
        brief(&busy)
    );
    drop(readers);
    let dropped_at = Instant::now();
    // Two separate promises, checked separately so that one failing does not hide the other.
    let idle = poll_metrics(&client, &server, Duration::from_secs(3), |s| {
        engine_idle(s, "pagoda")
    })
    .await;
    eprintln!("idle: {} after {:?}", idle.is_ok(), dropped_at.elapsed());
    let abort = [("finished_reason", "abort")];
    let counted = poll_metrics(&client, &server, Duration::from_secs(3), |s| {
        s.value("pagoda:request_success_total", &abort) >= aborted_before + num_streams as f64
    })
    .await;
    // The server keeps serving (this also wakes an engine that went idle).
    assert_serves_normally(&client, &server).await;
    let mut problems = Vec::new();
    if let Err(last) = &idle {
        problems.push(format!(
            "3 s after the streams were dropped, /metrics still shows work (running, waiting, \
             KV usage must all be 0):\n{}",
            brief(last)
        ));
    }
    let last = counted.unwrap_or_else(|last| last);
    let aborted = last.value("pagoda:request_success_total", &abort) - aborted_before;
    if aborted != num_streams as f64 {
        problems.push(format!(
            "request_success_total{{finished_reason=\"abort\"}} rose by {aborted}, not by the \
             {num_streams} streams the clients dropped"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// One stream dropped on its own: its abort reaches the engine while it waits between two
/// steps, the case where a stale snapshot would keep showing the request as running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_one_stream_shows_an_idle_engine() {
    let server = ServerProcess::start(&["--mock", "--mock-tpot-ms", "20"]);
    let client = client();
    for attempt in 0..3 {
        let response = client
            .post(server.url(CHAT))
            .json(&chat_body("drop me", 1000, true))
            .send()
            .await
            .expect("answered");
        let mut reader = SseReader::new(response);
        for _ in 0..4 {
            reader
                .next_data()
                .await
                .expect("a chunk")
                .expect("not the end");
        }
        drop(reader);
        let idle = poll_metrics(&client, &server, Duration::from_secs(3), |s| {
            engine_idle(s, "pagoda")
        })
        .await;
        if let Err(last) = idle {
            panic!(
                "attempt {attempt}: 3 s after the only stream was dropped, /metrics still shows it \
                 (running, waiting, KV usage must be 0):\n{}",
                brief(&last)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_are_echoed_and_logged() {
    let server = ServerProcess::start(&["--mock"]);
    let client = client();
    let given = "robustness-test-42";
    let response = client
        .post(server.url(CHAT))
        .header("x-request-id", given)
        .json(&bad_inputs::valid_chat())
        .send()
        .await
        .expect("answered");
    let reply = Reply::read(response).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.header("x-request-id"), Some(given), "echoed");
    assert_eq!(reply.json()["id"], "chatcmpl-robustness-test-42");
    let logged = tokio::task::block_in_place(|| server.wait_for_log(given, Duration::from_secs(5)));
    assert!(
        logged.is_some(),
        "no log line carries the request id {given}"
    );

    // Without one, the server makes one up, echoes it and logs it.
    let reply = post_json(&client, &server.url(CHAT), &chat_body("hi", 3, true)).await;
    assert_eq!(reply.status, StatusCode::OK);
    let made = reply
        .header("x-request-id")
        .expect("a generated id")
        .to_string();
    assert!(made.len() >= 16, "generated id {made:?}");
    let logged = tokio::task::block_in_place(|| server.wait_for_log(&made, Duration::from_secs(5)));
    assert!(
        logged.is_some(),
        "no log line carries the generated id {made}"
    );

    // Errors carry it too.
    let response = client
        .post(server.url(CHAT))
        .header("x-request-id", "bad-one-7")
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.headers()["x-request-id"], "bad-one-7");
}
