//! A `vllm serve` command line's flags against the real binary on the mock engine (which
//! generates `max_tokens` tokens, or the default when a request gives none):
//! `--override-generation-config` and `--generation-config` set what a request without its own
//! values gets, vLLM's no-op flags are accepted, and one asking for more than one device stops
//! the server with the reason.

mod common;

use common::api::{client, get, post_json};
use common::server::{mock_start_failure, sse_data, ServerProcess};
use serde_json::json;

/// Tokens generated for a chat request that sets no `max_tokens`.
async fn default_num_tokens(server: &ServerProcess) -> u64 {
    let reply = post_json(
        &client(),
        &server.url("/v1/chat/completions"),
        &json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let body = reply.json();
    body["usage"]["completion_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("{body}"))
}

#[tokio::test]
async fn a_vllm_command_line_starts_and_generation_defaults_apply() {
    let server = ServerProcess::start(&[
        "--mock",
        "--trust-remote-code",
        "--enforce-eager",
        "--disable-log-stats",
        "--tensor-parallel-size",
        "1",
        "--uvicorn-log-level",
        "info",
        "--enable-prompt-tokens-details",
        "--enable-force-include-usage",
        "--override-generation-config",
        r#"{"max_new_tokens": 3, "temperature": 0.5}"#,
    ]);
    assert_eq!(default_num_tokens(&server).await, 3);
    // A stream that did not ask for usage ends with it all the same.
    let streamed = post_json(
        &client(),
        &server.url("/v1/chat/completions"),
        &json!({"model": "mock", "stream": true, "max_tokens": 2,
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let events = sse_data(&streamed.text());
    let last: serde_json::Value = events
        .iter()
        .rev()
        .find(|data| data.as_str() != "[DONE]")
        .map(|data| serde_json::from_str(data).expect("JSON"))
        .expect("chunks");
    assert_eq!(last["usage"]["completion_tokens"], 2, "{last}");
    drop(server);
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::write(
        dir.path().join("generation_config.json"),
        r#"{"max_new_tokens": 5}"#,
    )
    .expect("writes");
    let from_dir = ServerProcess::start(&[
        "--mock",
        "--generation-config",
        dir.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(default_num_tokens(&from_dir).await, 5);
}

#[test]
fn flags_asking_for_what_the_server_cannot_do_stop_it_at_start() {
    for (flags, reason) in [
        (&["--tensor-parallel-size", "2"][..], "one device"),
        (
            &["--override-generation-config", "{\"temprature\": 1}"][..],
            "unknown key",
        ),
        (
            &["--generation-config", "/nonexistent"][..],
            "no generation_config.json",
        ),
        (&["--quantization", "awq"][..], "--weight-format"),
        (&["--response-role", ""][..], "--response-role"),
    ] {
        let stderr = mock_start_failure(flags);
        assert!(stderr.contains(reason), "{flags:?}: {stderr}");
    }
}

/// A chat request asking for `top` alternatives per token: its status and body.
async fn chat_top_logprobs(server: &ServerProcess, top: u64) -> (u16, serde_json::Value) {
    let reply = post_json(
        &client(),
        &server.url("/v1/chat/completions"),
        &json!({"model": "mock", "max_tokens": 2, "logprobs": true, "top_logprobs": top,
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    (reply.status.as_u16(), reply.json())
}

/// `--max-logprobs` moves the cap (the mock engine returns no alternatives: the default model's
/// test, `http_default_model_sampling.rs`, counts them).
#[tokio::test]
async fn max_logprobs_sets_how_many_alternatives_a_request_may_ask_for() {
    let default = ServerProcess::start(&["--mock"]);
    assert_eq!(chat_top_logprobs(&default, 20).await.0, 200);
    let (status, body) = chat_top_logprobs(&default, 21).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "top_logprobs", "{body}");
    drop(default);

    let raised = ServerProcess::start(&["--mock", "--max-logprobs", "30"]);
    assert_eq!(chat_top_logprobs(&raised, 30).await.0, 200);
    let completion = |n: u64| {
        let url = raised.url("/v1/completions");
        async move {
            let body = json!({"model": "mock", "prompt": "hi", "max_tokens": 2, "logprobs": n});
            let reply = post_json(&client(), &url, &body).await;
            (reply.status.as_u16(), reply.json())
        }
    };
    assert_eq!(completion(30).await.0, 200);
    let (status, body) = completion(31).await;
    assert_eq!(
        (status, &body["error"]["param"]),
        (400, &json!("logprobs")),
        "{body}"
    );
    let (status, body) = chat_top_logprobs(&raised, 31).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 30")),
        "{body}"
    );
    drop(raised);

    // -1: the whole vocabulary (the mock's byte tokenizer: a few hundred tokens), no more.
    let unbounded = ServerProcess::start(&["--mock", "--max-logprobs", "-1"]);
    assert_eq!(chat_top_logprobs(&unbounded, 250).await.0, 200);
    assert_eq!(chat_top_logprobs(&unbounded, 100_000).await.0, 400);
}

/// `--response-role`, `--return-tokens-as-token-ids` and `--root-path` (with vLLM's no-op
/// `--swap-space` and `--max-seq-len-to-capture` on the same line).
#[tokio::test]
async fn response_role_token_ids_and_root_path_apply() {
    let server = ServerProcess::start(&[
        "--mock",
        "--response-role",
        "bot",
        "--return-tokens-as-token-ids",
        "--root-path",
        "/llm/",
        "--swap-space",
        "4",
        "-q",
        "gguf",
        "--max-seq-len-to-capture",
        "8192",
    ]);
    let chat = |extra: serde_json::Value, path: &'static str| {
        let url = server.url(path);
        async move {
            let mut body = json!({"model": "mock", "max_tokens": 2, "logprobs": true,
                                  "messages": [{"role": "user", "content": "hi"}]});
            for (key, value) in extra.as_object().expect("an object") {
                body[key] = value.clone();
            }
            post_json(&client(), &url, &body).await
        }
    };
    // Through the prefix a proxy left on, and without it.
    for path in ["/llm/v1/chat/completions", "/v1/chat/completions"] {
        let reply = chat(json!({}), path).await;
        let body = reply.json();
        assert_eq!(reply.status.as_u16(), 200, "{path}: {body}");
        assert_eq!(body["choices"][0]["message"]["role"], "bot", "{body}");
        let first = &body["choices"][0]["logprobs"]["content"][0]["token"];
        assert!(
            first.as_str().is_some_and(|t| t.starts_with("token_id:")),
            "{body}"
        );
    }
    // A request's own field wins over the server's default.
    let body = chat(
        json!({"return_tokens_as_token_ids": false}),
        "/llm/v1/chat/completions",
    )
    .await
    .json();
    let first = &body["choices"][0]["logprobs"]["content"][0]["token"];
    assert!(
        first.as_str().is_some_and(|t| !t.starts_with("token_id:")),
        "{body}"
    );
    // The stream's first delta carries the role too.
    let streamed = chat(json!({"stream": true}), "/llm/v1/chat/completions").await;
    let first: serde_json::Value =
        serde_json::from_str(&sse_data(&streamed.text())[0]).expect("JSON");
    assert_eq!(first["choices"][0]["delta"]["role"], "bot", "{first}");
    // Continuing the last message: its role, as vLLM answers.
    let continued = chat(
        json!({"messages": [{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": "Hel"}],
               "continue_final_message": true, "add_generation_prompt": false}),
        "/v1/chat/completions",
    )
    .await
    .json();
    assert_eq!(
        continued["choices"][0]["message"]["role"], "assistant",
        "{continued}"
    );
    for path in ["/llm/health", "/llm/v1/models", "/llm"] {
        let status = get(&client(), &server.url(path)).await.status.as_u16();
        let expected = if path == "/llm" { 404 } else { 200 };
        assert_eq!(status, expected, "{path}");
    }
    assert_eq!(
        get(&client(), &server.url("/llmx/health"))
            .await
            .status
            .as_u16(),
        404
    );
}
