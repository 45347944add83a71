//! Speculative decoding through the server (`--speculative-config`): vLLM's `spec_decode_*`
//! counters in either namespace, equal to what the responses' usage reports per request
//! (`completion_tokens_details.accepted_prediction_tokens` / `rejected_prediction_tokens`);
//! refusals at startup; and on the default model, greedy answers identical with and without
//! prompt lookup and with the model as its own draft model, with proposals accepted and
//! JSON-schema outputs valid.

mod common;

use common::api::{client, post_json, scrape};
use common::prom::Scrape;
use common::server::{mock_start_failure, ServerProcess};
use reqwest::StatusCode;
use serde_json::{json, Value};

const NGRAM: &str =
    r#"{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2,"prompt_lookup_max":3}"#;

/// Accepted and rejected proposals a response's usage reports.
fn predictions(usage: &Value) -> (u64, u64) {
    let details = &usage["completion_tokens_details"];
    let count = |key: &str| {
        details[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {usage}"))
    };
    (
        count("accepted_prediction_tokens"),
        count("rejected_prediction_tokens"),
    )
}

fn counter(scrape: &Scrape, namespace: &str, name: &str) -> f64 {
    scrape.sum(&format!("{namespace}:spec_decode_{name}"), &[])
}

async fn check_counters_equal_usage(namespace: &str) {
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-tpot-ms",
        "1",
        "--metrics-namespace",
        namespace,
        "--speculative-config",
        NGRAM,
    ]);
    let client = client();
    let (mut accepted, mut rejected) = (0, 0);
    for i in 0..4 {
        let body = json!({"prompt": format!("request {i}"), "max_tokens": 60, "ignore_eos": true});
        let reply = post_json(&client, &server.url("/v1/completions"), &body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let (a, r) = predictions(&reply.json()["usage"]);
        accepted += a;
        rejected += r;
    }
    let metrics = scrape(&client, &server).await;
    assert!(
        accepted > 0,
        "the mock's repeating text is proposed and accepted"
    );
    assert_eq!(
        counter(&metrics, namespace, "num_accepted_tokens_total"),
        accepted as f64
    );
    assert_eq!(
        counter(&metrics, namespace, "num_draft_tokens_total"),
        (accepted + rejected) as f64
    );
    let drafts = counter(&metrics, namespace, "num_drafts_total");
    assert!(drafts > 0.0 && drafts * 4.0 >= (accepted + rejected) as f64);
    let per_pos = format!("{namespace}:spec_decode_num_accepted_tokens_per_pos_total");
    let positions: Vec<f64> = (0..4)
        .map(|p| metrics.value(&per_pos, &[("position", &p.to_string())]))
        .collect();
    assert_eq!(
        positions.iter().sum::<f64>(),
        accepted as f64,
        "{positions:?}"
    );
    assert!(positions.windows(2).all(|w| w[0] >= w[1]), "{positions:?}");
    // A streamed chat reports the same details in its usage chunk.
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}});
    let reply = post_json(&client, &server.url("/v1/chat/completions"), &body).await;
    let usage = common::server::sse_data(&reply.text())
        .iter()
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find_map(|chunk| chunk.get("usage").filter(|u| !u.is_null()).cloned())
        .expect("a usage chunk");
    let (a, r) = predictions(&usage);
    assert!(a + r > 0, "{usage}");
}

#[tokio::test]
async fn counters_equal_the_usage_of_the_requests_in_both_namespaces() {
    check_counters_equal_usage("pagoda").await;
    check_counters_equal_usage("vllm").await;
}

/// vLLM's `disable_by_batch_size` is taken: a request running alone (below the threshold)
/// still speculates. (Which steps propose at which batch size: the scheduler's tests.)
#[tokio::test]
async fn disable_by_batch_size_is_taken_and_a_lone_request_still_speculates() {
    let config = r#"{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2,"prompt_lookup_max":3,"disable_by_batch_size":2}"#;
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-tpot-ms",
        "1",
        "--speculative-config",
        config,
    ]);
    let client = client();
    let body = json!({"prompt": "alone", "max_tokens": 60, "ignore_eos": true});
    let reply = post_json(&client, &server.url("/v1/completions"), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let (accepted, _) = predictions(&reply.json()["usage"]);
    assert!(accepted > 0, "{}", reply.text());
}

#[tokio::test]
async fn a_server_that_does_not_speculate_reports_none_of_it() {
    let server = ServerProcess::start_mock("0", "1");
    let client = client();
    let body = json!({"prompt": "x", "max_tokens": 8});
    let reply = post_json(&client, &server.url("/v1/completions"), &body).await;
    assert!(reply.json()["usage"]
        .get("completion_tokens_details")
        .is_none());
    let metrics = scrape(&client, &server).await;
    assert!(metrics.names().iter().all(|n| !n.contains("spec_decode")));
}

#[test]
fn unsupported_speculation_is_refused_at_startup_by_name() {
    for (config, named) in [
        (
            r#"{"method":"eagle","num_speculative_tokens":3}"#,
            "\"eagle\"",
        ),
        (
            r#"{"method":"draft_model","model":"m","num_speculative_tokens":3}"#,
            "\"draft_model\" needs an engine that runs models (not --mock)",
        ),
        (
            r#"{"method":"draft_model","num_speculative_tokens":3}"#,
            "needs \"model\"",
        ),
        (
            r#"{"method":"ngram","num_speculative_tokens":3,"lookup_max":2}"#,
            "lookup_max",
        ),
        (
            r#"{"method":"ngram","num_speculative_tokens":0}"#,
            "num_speculative_tokens",
        ),
        (
            r#"{"method":"ngram","num_speculative_tokens":3,"disable_by_batch_size":1}"#,
            "disable_by_batch_size must be at least 2",
        ),
    ] {
        let failure = mock_start_failure(&["--speculative-config", config]);
        assert!(failure.contains(named), "{config}: {failure}");
    }
}

/// A passage the prompt asks the model to copy: much of the answer is in the prompt.
const PASSAGE: &str = "The quick brown fox jumps over the lazy dog. Pack my box with five dozen \
    liquor jugs. How vexingly quick daft zebras jump. The five boxing wizards jump quickly.";

async fn completion(server: &ServerProcess, body: &Value) -> Value {
    let reply = post_json(&client(), &server.url("/v1/chat/completions"), body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json()
}

fn answer(response: &Value) -> String {
    response["choices"][0]["message"]["content"]
        .as_str()
        .expect("content")
        .to_string()
}

fn requests() -> Vec<Value> {
    let copy = format!("Repeat this text exactly, nothing else:\n\n{PASSAGE}");
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
        "required": ["name", "age", "tags"], "additionalProperties": false});
    vec![
        json!({"messages": [{"role": "user", "content": copy}], "max_tokens": 64, "temperature": 0}),
        json!({"messages": [{"role": "user", "content": "Name three colors."}],
            "max_tokens": 32, "temperature": 0}),
        json!({"messages": [{"role": "user", "content": format!("Describe a person from: {PASSAGE}")}],
            "max_tokens": 96, "temperature": 0,
            "response_format": {"type": "json_schema",
                "json_schema": {"name": "person", "schema": schema, "strict": true}}}),
    ]
}

#[tokio::test]
async fn the_default_model_answers_the_same_with_prompt_lookup_and_with_a_draft_model() {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 model path");
    let plain = ServerProcess::start(&["--model", model]);
    let mut expected = Vec::new();
    for body in requests() {
        expected.push(answer(&completion(&plain, &body).await));
    }
    drop(plain);
    let speculating = ServerProcess::start(&["--model", model, "--speculative-config", NGRAM]);
    let mut num_accepted = 0;
    for (body, want) in requests().iter().zip(&expected) {
        let response = completion(&speculating, body).await;
        assert_eq!(&answer(&response), want, "{body}");
        num_accepted += predictions(&response["usage"]).0;
    }
    // OpenAI's Predicted Outputs: an answer predicted right is the same answer, most of it
    // from accepted proposals.
    let mut predicted = requests()[1].clone();
    predicted["prediction"] = json!({"type": "content", "content": expected[1]});
    let response = completion(&speculating, &predicted).await;
    assert_eq!(answer(&response), expected[1], "with a prediction");
    let (accepted, _) = predictions(&response["usage"]);
    let num_tokens = response["usage"]["completion_tokens"]
        .as_u64()
        .expect("usage");
    assert!(
        2 * accepted >= num_tokens,
        "the prediction is accepted: {accepted} of {num_tokens} tokens"
    );
    drop(speculating);
    // The model as its own draft: the same answers, and on free text (but for rounding between
    // batch shapes) every proposal accepted. The draft does not see the JSON request's grammar,
    // so there its proposals are also rejected where the grammar forbids them.
    let self_draft =
        format!(r#"{{"method": "draft_model", "model": {model:?}, "num_speculative_tokens": 3}}"#);
    let drafting = ServerProcess::start(&["--model", model, "--speculative-config", &self_draft]);
    let (mut num_free_accepted, mut num_free_rejected) = (0, 0);
    for (i, (body, want)) in requests().iter().zip(&expected).enumerate() {
        let response = completion(&drafting, body).await;
        assert_eq!(&answer(&response), want, "draft model: {body}");
        let (accepted, rejected) = predictions(&response["usage"]);
        if i < 2 {
            num_free_accepted += accepted;
            num_free_rejected += rejected;
        }
    }
    // 24 accepted and 0 rejected on 2026-12-03.
    assert!(
        num_free_accepted >= 16 && num_free_accepted > 4 * num_free_rejected,
        "a self-draft is accepted: {num_free_accepted} accepted, {num_free_rejected} rejected"
    );
    // The 135M model copies loosely (13 of its 18 copied tokens were accepted on 2026-12-03).
    assert!(
        num_accepted >= 8,
        "the copied passage is accepted ({num_accepted})"
    );
    let person: Value = serde_json::from_str(&expected[2]).expect("JSON output");
    assert!(person["name"].is_string() && person["age"].is_i64() && person["tags"].is_array());
    assert_eq!(person.as_object().map(|o| o.len()), Some(3), "{person}");
}

/// The mock's output text, which a prompt that quotes it lets prompt lookup propose from the
/// first token on.
const MOCK_TEXT: &str = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod \
tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud \
exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. ";

/// A stop string inside a step's accepted proposals ends the text where it would without
/// speculation, streamed or not, and the usage counts only the tokens returned.
#[tokio::test]
async fn a_stop_string_among_accepted_proposals_ends_the_output_where_it_would() {
    let plain = ServerProcess::start(&["--mock"]);
    let speculating = ServerProcess::start(&["--mock", "--speculative-config", NGRAM]);
    let body = json!({"prompt": MOCK_TEXT, "max_tokens": 300, "stop": ["commodo"]});
    let client = client();
    let mut replies = Vec::new();
    for server in [&plain, &speculating] {
        let reply = post_json(&client, &server.url("/v1/completions"), &body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        replies.push(reply.json());
    }
    let (want, got) = (&replies[0], &replies[1]);
    let text = got["choices"][0]["text"].as_str().expect("text");
    assert_eq!(text, want["choices"][0]["text"].as_str().expect("text"));
    // The mock's text, up to the stop string.
    let at = MOCK_TEXT.find(text).expect("the mock's text");
    assert!(text.len() > 150, "{text:?}");
    assert!(
        MOCK_TEXT[at + text.len()..].starts_with("commodo"),
        "{text:?}"
    );
    assert_eq!(got["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        got["usage"]["completion_tokens"],
        want["usage"]["completion_tokens"]
    );
    let (accepted, _) = predictions(&got["usage"]);
    assert!(
        accepted > 50,
        "the quoted text is accepted: {}",
        got["usage"]
    );
    // Streamed: each server's second request (the mock starts each request one token further
    // into its text), the same text from both.
    let stream = json!({"prompt": MOCK_TEXT, "max_tokens": 300, "stop": ["commodo"],
        "stream": true});
    let mut texts = Vec::new();
    for server in [&plain, &speculating] {
        let reply = post_json(&client, &server.url("/v1/completions"), &stream).await;
        let streamed: String = common::server::sse_data(&reply.text())
            .iter()
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|chunk| chunk["choices"][0]["text"].as_str().map(str::to_string))
            .collect();
        texts.push(streamed);
    }
    assert_eq!(texts[1], texts[0]);
    assert!(
        texts[1].len() > 150 && !texts[1].contains("commodo"),
        "{:?}",
        texts[1]
    );
}
