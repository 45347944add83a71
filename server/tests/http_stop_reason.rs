//! vLLM's `stop_reason` on the default model over HTTP: the stop string that matched, the
//! request's stop token that was generated, `null` for EOS, end of turn and length — full and
//! streamed (on the finishing chunk), chat and completions.

mod common;

use serde_json::{json, Value};

use common::default_model_api::*;

fn completion(extra: Value) -> Value {
    with(
        json!({"model": MODEL, "prompt": "The capital of France is", "max_tokens": 16,
               "temperature": 0, "return_token_ids": true}),
        extra,
    )
}

/// The stop reason of the finishing chunk of a stream, checking no other chunk names one.
fn streamed_stop_reason(chunks: &[Value]) -> Value {
    let finishing: Vec<&Value> = chunks
        .iter()
        .flat_map(|chunk| array(&chunk["choices"]))
        .filter(|choice| !choice["finish_reason"].is_null())
        .collect();
    assert_eq!(finishing.len(), 1, "{chunks:?}");
    finishing[0]["stop_reason"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_reason_names_what_ended_the_choice() {
    let api = Api::start();
    let free = api.json(COMPLETIONS, &completion(json!({}))).await;
    let text = string(&free["choices"][0]["text"]).to_string();
    assert!(text.contains("Paris"), "the premise: {text:?}");
    assert_eq!(finish_reason(&free), "length");
    assert_eq!(free["choices"][0]["stop_reason"], Value::Null, "{free}");

    // A stop string: the one that matched, of several.
    let stops = json!({"stop": ["Atlantis", "Paris"]});
    let stopped = api.json(COMPLETIONS, &completion(stops.clone())).await;
    assert_eq!(finish_reason(&stopped), "stop");
    assert_eq!(stopped["choices"][0]["stop_reason"], "Paris", "{stopped}");
    let chunks = api.sse(COMPLETIONS, &completion(stops)).await;
    assert_eq!(streamed_stop_reason(&chunks), "Paris");

    // A stop token the request listed: its id.
    let second = free["choices"][0]["token_ids"][1].clone();
    let by_token = completion(json!({"stop_token_ids": [second]}));
    let stopped = api.json(COMPLETIONS, &by_token).await;
    assert_eq!(finish_reason(&stopped), "stop");
    assert_eq!(stopped["choices"][0]["stop_reason"], second, "{stopped}");
    assert_eq!(
        streamed_stop_reason(&api.sse(COMPLETIONS, &by_token).await),
        second
    );

    // The model's end of turn: `null`, as vLLM reports EOS.
    let request = chat(FRANCE, 64);
    let answered = api.json(CHAT, &request).await;
    assert_eq!(finish_reason(&answered), "stop", "{answered}");
    assert_eq!(answered["choices"][0]["stop_reason"], Value::Null);
    assert_eq!(
        streamed_stop_reason(&api.sse(CHAT, &request).await),
        Value::Null
    );
}
