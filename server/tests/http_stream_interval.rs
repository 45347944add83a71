//! vLLM's `--stream-interval` and a request's `stream_interval` on the default model over HTTP:
//! streamed tokens go out N at a time (the first and the last at once), a request may raise the
//! server's interval but not lower it, and the text, token ids and log-probabilities are those of
//! the unbatched answer.

mod common;

use serde_json::{json, Value};

use common::default_model_api::*;

const NUM_TOKENS: usize = 10;

fn completion() -> Value {
    json!({"model": MODEL, "prompt": "The capital of France is", "max_tokens": NUM_TOKENS,
        "temperature": 0, "ignore_eos": true, "return_token_ids": true})
}

/// The number of generated tokens each streamed chunk carries (chunks without any left out).
fn chunk_sizes(chunks: &[Value]) -> Vec<usize> {
    chunks
        .iter()
        .flat_map(|chunk| array(&chunk["choices"]))
        .map(|choice| choice["token_ids"].as_array().map_or(0, Vec::len))
        .filter(|&n| n > 0)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_tokens_go_out_by_the_interval() {
    let api = Api::start_with(&["--stream-interval", "3"]);
    let whole = api.json(COMPLETIONS, &completion()).await;
    let text = string(&whole["choices"][0]["text"]).to_string();

    let chunks = api.sse(COMPLETIONS, &completion()).await;
    assert_eq!(chunk_sizes(&chunks), [1, 3, 3, 3]);
    assert_eq!(streamed_choices(&chunks)[&0].text, text);

    // A request raises the interval; a lower one is raised to the server's.
    let raised = api
        .sse(
            COMPLETIONS,
            &with(completion(), json!({"stream_interval": 5})),
        )
        .await;
    assert_eq!(chunk_sizes(&raised), [1, 5, 4]);
    assert_eq!(streamed_choices(&raised)[&0].text, text);
    let lowered = api
        .sse(
            COMPLETIONS,
            &with(completion(), json!({"stream_interval": 1})),
        )
        .await;
    assert_eq!(chunk_sizes(&lowered), [1, 3, 3, 3]);

    // Chat: each chunk's log-probabilities are its tokens'.
    let chat_request = with(
        chat(FRANCE, NUM_TOKENS as u64),
        json!({"temperature": 0, "ignore_eos": true, "return_token_ids": true,
               "logprobs": true}),
    );
    let chat_chunks = api.sse(CHAT, &chat_request).await;
    assert_eq!(chunk_sizes(&chat_chunks), [1, 3, 3, 3]);
    for choice in chat_chunks.iter().flat_map(|c| array(&c["choices"])) {
        let num_ids = choice["token_ids"].as_array().map_or(0, Vec::len);
        let num_logprobs = choice["logprobs"]["content"].as_array().map_or(0, Vec::len);
        assert_eq!(num_ids, num_logprobs, "{choice}");
    }
    let whole_chat = api.json(CHAT, &chat_request).await;
    assert_eq!(
        streamed_choices(&chat_chunks)[&0].text,
        content(&whole_chat)
    );

    // Not a number of tokens: a 400 naming the field.
    let bad = with(completion(), json!({"stream": true, "stream_interval": 0}));
    let reply = api.send(api.post(COMPLETIONS, &bad)).await;
    assert_eq!(reply.status().as_u16(), 400);
    let body: Value = reply.json().await.expect("json");
    assert_eq!(body["error"]["param"], "stream_interval", "{body}");
}
