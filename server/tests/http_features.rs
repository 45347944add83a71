//! Features of `pagoda-server` checked over HTTP against the real binary: SSE keep-alives, an
//! engine fault inside a stream, JSON logs, the admin prefix-cache reset, chat content parts, the
//! mock's output-length distributions. (`/version`, `/health` and `--help` against the docs are in
//! `server_cli_docs.rs`.)
//!
//! Every server runs the mock engine (`--mock`: the real scheduler and KV manager, no model
//! compute, a byte tokenizer with one token per byte, blocks of 16 tokens).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::api::{
    brief, chat_body, client, engine_idle, poll_metrics, post_json, summarize, Reply,
};
use common::bad_inputs::{CHAT, COMPLETIONS};
use common::server::{sse_data, ServerProcess};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

/// How long the engine may take to settle after its last request ends.
const SETTLE: Duration = Duration::from_secs(5);

/// POSTs a completion request; fails the test unless it is answered 200. Returns the body.
async fn complete(client: &Client, server: &ServerProcess, body: Value) -> Value {
    let reply = post_json(client, &server.url(COMPLETIONS), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{body}: {}", reply.text());
    reply.json()
}

/// The `(finish_reason, completion_tokens)` of a one-choice response.
fn outcome(response: &Value) -> (String, u64) {
    let reason = response["choices"][0]["finish_reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no finish_reason: {response}"));
    let tokens = response["usage"]["completion_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("no usage.completion_tokens: {response}"));
    (reason.to_string(), tokens)
}

/// The non-empty lines of an SSE body, in order (`data: …` events and `:` comments).
fn sse_lines(body: &str) -> Vec<&str> {
    body.lines().filter(|l| !l.is_empty()).collect()
}

/// Checks an `{"error": {...}}` value against OpenAI's shape; returns the inner object.
fn openai_error_object(value: &Value) -> &Value {
    let error = &value["error"];
    assert!(error["message"].is_string(), "no message: {value}");
    assert!(error["type"].is_string(), "no type: {value}");
    for key in ["param", "code"] {
        assert!(error.get(key).is_some(), "no {key}: {value}");
    }
    error
}

#[tokio::test]
async fn idle_streams_get_keep_alive_comments_then_finish() {
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "2500",
        "--sse-keep-alive",
        "0.5",
    ]);
    let client = client();
    let completion_body =
        json!({"prompt": "Wait", "max_tokens": 4, "ignore_eos": true, "stream": true});
    let (chat_url, completions_url) = (server.url(CHAT), server.url(COMPLETIONS));
    let chat_request = chat_body("Wait", 4, true);
    let (chat, completion) = tokio::join!(
        post_json(&client, &chat_url, &chat_request),
        post_json(&client, &completions_url, &completion_body),
    );
    for (reply, what) in [(&chat, "chat"), (&completion, "completion")] {
        assert_eq!(reply.status, StatusCode::OK, "{what}: {}", reply.text());
        let body = reply.text();
        let lines = sse_lines(&body);
        let comments: Vec<&&str> = lines.iter().filter(|l| l.starts_with(':')).collect();
        assert!(
            comments.iter().all(|l| **l == ": keep-alive"),
            "{what}: {lines:?}"
        );
        let summary = summarize(&sse_data(&body));
        assert!(summary.errors.is_empty(), "{what}: {body}");
        assert_eq!(summary.finish_reasons, ["length"], "{what}: {body}");
        assert!(summary.ended_with_done, "{what}: {body}");
        assert!(!summary.text.is_empty(), "{what}: {body}");
    }
    // Chat opens with the role delta at once (as documented); the keep-alives fill the 2.5 s wait
    // for the first content.
    let body = chat.text();
    let lines = sse_lines(&body);
    let first_data = lines
        .iter()
        .position(|l| l.starts_with("data: "))
        .expect("data");
    let opening: Value = serde_json::from_str(&lines[first_data]["data: ".len()..]).expect("JSON");
    assert_eq!(
        opening["choices"][0]["delta"]["role"], "assistant",
        "{body}"
    );
    let first_content = lines
        .iter()
        .position(|l| {
            l.strip_prefix("data: ")
                .and_then(|d| serde_json::from_str::<Value>(d).ok())
                .and_then(|c| {
                    c["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_string)
                })
                .is_some_and(|content| !content.is_empty())
        })
        .expect("a content delta");
    let num_waiting = lines[..first_content]
        .iter()
        .filter(|l| l.starts_with(':'))
        .count();
    assert!(
        num_waiting >= 2,
        "chat: {num_waiting} keep-alives before content: {lines:?}"
    );
    // Completions have no opening chunk: the keep-alives come before the first `data:` event.
    let body = completion.text();
    let lines = sse_lines(&body);
    let first_data = lines
        .iter()
        .position(|l| l.starts_with("data: "))
        .expect("data");
    assert!(
        first_data >= 2,
        "completion: {first_data} keep-alives first: {lines:?}"
    );
}

#[tokio::test]
async fn an_engine_fault_mid_stream_ends_in_an_error_event_and_the_engine_goes_on() {
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-fail-after-tokens",
        "3",
        "--mock-tpot-ms",
        "5",
    ]);
    let client = client();

    let reply = post_json(&client, &server.url(CHAT), &chat_body("Fail me", 10, true)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let payloads = sse_data(&reply.text());
    let summary = summarize(&payloads);
    assert!(
        (1..=3).contains(&summary.num_content_chunks),
        "some content before the fault: {payloads:#?}"
    );
    assert_eq!(summary.errors.len(), 1, "{payloads:#?}");
    assert!(summary.ended_with_done, "{payloads:#?}");
    let error_at = payloads.iter().position(|p| p.contains("\"error\""));
    assert_eq!(
        error_at,
        Some(payloads.len() - 2),
        "error, then [DONE]: {payloads:#?}"
    );
    let error = openai_error_object(&summary.errors[0]);
    assert_eq!(error["type"], "server_error", "{error}");
    let message = error["message"].as_str().unwrap_or("");
    assert!(
        message.contains("fault"),
        "the message names the fault: {error}"
    );

    let reply = post_json(
        &client,
        &server.url(CHAT),
        &chat_body("Fail me too", 10, false),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{}",
        reply.text()
    );
    let error = reply.expect_openai_error();
    assert_eq!(error["type"], "server_error", "{error}");
    assert!(
        error["message"].as_str().unwrap_or("").contains("fault"),
        "{error}"
    );

    let reply = post_json(
        &client,
        &server.url(CHAT),
        &chat_body("Still alive?", 3, false),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "the engine survived: {}",
        reply.text()
    );
    assert_eq!(outcome(&reply.json()), ("length".to_string(), 3));

    let settled = poll_metrics(&client, &server, SETTLE, |s| engine_idle(s, "pagoda")).await;
    let scrape = settled.unwrap_or_else(|last| panic!("not idle:\n{}", brief(&last)));
    assert_eq!(scrape.value("pagoda:num_requests_running", &[]), 0.0);
    assert_eq!(scrape.value("pagoda:kv_cache_usage_perc", &[]), 0.0);
}

#[tokio::test]
async fn json_logs_are_one_object_per_line_with_the_request_id_in_the_span() {
    let server = ServerProcess::start(&["--mock", "--log-format", "json"]);
    let client = client();
    let response = client
        .post(server.url(CHAT))
        .header("x-request-id", "json-log-1")
        .json(&chat_body("Log me", 3, false))
        .send()
        .await
        .expect("answered");
    let reply = Reply::read(response).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());

    // Every line up to one that names the request, and whatever follows within half a second.
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut quiet_after: Option<Instant> = None;
    loop {
        let until = quiet_after.unwrap_or(deadline).min(deadline);
        let left = until.saturating_duration_since(Instant::now());
        let Ok(line) = server.log_lines.recv_timeout(left) else {
            break;
        };
        if quiet_after.is_none() && line.contains("json-log-1") {
            quiet_after = Some(Instant::now() + Duration::from_millis(500));
        }
        lines.push(line);
    }
    let objects: Vec<Value> = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let value: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {l}"));
            assert!(value.is_object(), "a log line is not an object: {l}");
            assert!(
                value["level"].is_string() && value["message"].is_string(),
                "{l}"
            );
            value
        })
        .collect();
    let of_request: Vec<&Value> = objects
        .iter()
        .filter(|o| o["span"]["request_id"] == "json-log-1")
        .collect();
    assert!(
        !of_request.is_empty(),
        "no line with span.request_id = json-log-1 in {lines:#?}"
    );
    assert!(
        of_request.iter().all(|o| o["span"]["name"] == "http"),
        "{of_request:#?}"
    );
    assert!(
        of_request
            .iter()
            .any(|o| o["message"] == "request accepted"),
        "the request's log line carries its id: {of_request:#?}"
    );
}

#[tokio::test]
async fn reset_prefix_cache_drops_the_cached_prefix() {
    let server = ServerProcess::start(&["--mock"]);
    let client = client();
    let prompt = "The quick brown fox jumps over the lazy dog. ".repeat(5)[..200].to_string();
    let body = json!({"prompt": prompt, "max_tokens": 2, "ignore_eos": true});
    let cached = |response: &Value| {
        assert_eq!(response["usage"]["prompt_tokens"], 200, "{response}");
        response["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or_else(|| panic!("no cached_tokens: {response}"))
    };
    assert_eq!(
        cached(&complete(&client, &server, body.clone()).await),
        0,
        "a fresh cache"
    );
    let hit = cached(&complete(&client, &server, body.clone()).await);
    assert!(
        hit > 0 && hit < 200,
        "the second request hits the cache: {hit}"
    );

    let reply = post_json(&client, &server.url("/reset_prefix_cache"), &json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let dropped = reply.json()["num_blocks_dropped"].as_u64();
    assert!(dropped.is_some_and(|n| n > 0), "{}", reply.text());
    assert_eq!(
        cached(&complete(&client, &server, body).await),
        0,
        "nothing cached after reset"
    );
}

#[tokio::test]
async fn reset_prefix_cache_needs_the_api_key() {
    let server = ServerProcess::start(&["--mock", "--api-key", "k"]);
    let client = client();
    let url = server.url("/reset_prefix_cache");
    let reply = Reply::read(client.post(&url).send().await.expect("answered")).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.text());
    assert_eq!(reply.expect_openai_error()["type"], "authentication_error");
    let keyed = client
        .post(&url)
        .bearer_auth("k")
        .send()
        .await
        .expect("answered");
    let reply = Reply::read(keyed).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
}

#[tokio::test]
async fn chat_content_parts_are_joined_with_newlines() {
    let server = ServerProcess::start(&["--mock"]);
    let client = client();
    let parts = json!([{"type": "text", "text": "Hello"}, {"type": "text", "text": "world"}]);
    let messages = |content: Value| json!([{"role": "user", "content": content}]);
    let prompt_tokens = |reply: Reply| {
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        reply.json()["usage"]["prompt_tokens"]
            .as_u64()
            .expect("prompt_tokens")
    };
    let chat = |content: Value| json!({"messages": messages(content), "max_tokens": 1});
    let from_parts =
        prompt_tokens(post_json(&client, &server.url(CHAT), &chat(parts.clone())).await);
    let from_text =
        prompt_tokens(post_json(&client, &server.url(CHAT), &chat(json!("Hello\nworld"))).await);
    assert_eq!(from_parts, from_text);

    let tokenize = |content: Value| {
        let url = server.url("/tokenize");
        let client = client.clone();
        async move {
            let reply = post_json(&client, &url, &json!({"messages": messages(content)})).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
            reply.json()
        }
    };
    let of_parts = tokenize(parts).await;
    let of_text = tokenize(json!("Hello\nworld")).await;
    assert_eq!(
        of_parts["tokens"], of_text["tokens"],
        "the same prompt token for token"
    );
    assert_eq!(of_parts["count"], from_parts);
    let spaced = tokenize(json!("Hello world")).await;
    assert_ne!(
        of_parts["tokens"], spaced["tokens"],
        "joined by a newline, not a space"
    );
}

#[tokio::test]
async fn fixed_mock_output_length_ends_with_eos_unless_capped_or_ignored() {
    let server = ServerProcess::start(&["--mock", "--mock-output-len", "fixed:5"]);
    let client = client();
    let cases = [
        (json!({"prompt": "one", "max_tokens": 20}), ("stop", 5)),
        (
            json!({"prompt": "two", "max_tokens": 20, "ignore_eos": true}),
            ("length", 20),
        ),
        (json!({"prompt": "three", "max_tokens": 3}), ("length", 3)),
    ];
    for (body, (reason, tokens)) in cases {
        let response = complete(&client, &server, body.clone()).await;
        assert_eq!(
            outcome(&response),
            (reason.to_string(), tokens),
            "{body}: {response}"
        );
    }
}

/// The completion lengths of 20 sequential requests on a fresh `uniform:2:6` server, seed 7.
async fn uniform_lengths() -> Vec<u64> {
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-output-len",
        "uniform:2:6",
        "--mock-seed",
        "7",
    ]);
    let client = client();
    let mut lengths = Vec::new();
    for i in 0..20 {
        let body = json!({"prompt": format!("request {i}"), "max_tokens": 50});
        let response = complete(&client, &server, body).await;
        let (reason, tokens) = outcome(&response);
        assert_eq!(reason, "stop", "{response}");
        lengths.push(tokens);
    }
    lengths
}

#[tokio::test]
async fn uniform_mock_output_lengths_stay_in_range_and_repeat_with_the_seed() {
    let first = uniform_lengths().await;
    assert!(first.iter().all(|l| (2..=6).contains(l)), "{first:?}");
    let distinct: BTreeSet<&u64> = first.iter().collect();
    assert!(
        distinct.len() > 1,
        "lengths are drawn, not fixed: {first:?}"
    );
    let second = uniform_lengths().await;
    assert_eq!(
        first, second,
        "the same seed and requests give the same lengths"
    );
}
