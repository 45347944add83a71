//! A `vllm serve` command line's flags against the real binary on the mock engine (which
//! generates `max_tokens` tokens, or the default when a request gives none):
//! `--override-generation-config` and `--generation-config` set what a request without its own
//! values gets, vLLM's no-op flags are accepted, and one asking for more than one device stops
//! the server with the reason.

mod common;

use common::api::{client, post_json};
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
    ] {
        let stderr = mock_start_failure(flags);
        assert!(stderr.contains(reason), "{flags:?}: {stderr}");
    }
}
