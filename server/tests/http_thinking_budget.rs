//! vLLM's `thinking_token_budget` on the default model over HTTP with `--reasoning-parser
//! deepseek_r1`: the reply starts inside a thinking section (the prompt ends with `<think>`, as
//! reasoning templates write it); with a budget, the section holds that many tokens and then the
//! server writes `</think>` itself, so the reply goes on to an answer. Full and streamed; bad
//! budgets and a budget beside a structured output are 400s.

mod common;

use serde_json::{json, Value};

use common::default_model_api::*;

const BUDGET: usize = 5;

fn thinking_chat(extra: Value) -> Value {
    with(
        json!({"model": MODEL, "max_tokens": 30, "temperature": 0, "return_token_ids": true,
               "continue_final_message": true, "add_generation_prompt": false,
               "messages": [{"role": "user", "content": "What is the capital of France?"},
                            {"role": "assistant", "content": "<think>"}]}),
        extra,
    )
}

fn ids(value: &Value) -> Vec<u64> {
    array(value).iter().map(count).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_thinking_section_closes_after_the_budget() {
    let api = Api::start_with(&["--reasoning-parser", "deepseek_r1"]);
    let close = ids(&api.token_ids("</think>", false).await.into());
    let free = api.json(CHAT, &thinking_chat(json!({}))).await;
    let free_ids = ids(&free["choices"][0]["token_ids"]);
    assert_ne!(
        free_ids.get(BUDGET..BUDGET + close.len()),
        Some(&close[..]),
        "the premise: unbudgeted, the model does not close there"
    );

    let budget = json!({"thinking_token_budget": BUDGET});
    let budgeted = api.json(CHAT, &thinking_chat(budget.clone())).await;
    let choice = &budgeted["choices"][0];
    let budgeted_ids = ids(&choice["token_ids"]);
    // The same greedy thinking, then the closing tag in place of what the model would write.
    assert_eq!(budgeted_ids[..BUDGET], free_ids[..BUDGET]);
    assert_eq!(budgeted_ids[BUDGET..BUDGET + close.len()], close[..]);
    let thought = string(&choice["message"]["reasoning_content"]).to_string();
    let written: Value = api
        .json("/detokenize", &json!({"tokens": &budgeted_ids[..BUDGET]}))
        .await;
    assert_eq!(thought, string(&written["prompt"]));
    let num_reasoning = &budgeted["usage"]["completion_tokens_details"]["reasoning_tokens"];
    assert_eq!(count(num_reasoning) as usize, BUDGET + close.len());

    // Streamed: the same split.
    let chunks = api.sse(CHAT, &thinking_chat(budget)).await;
    let (mut reasoning, mut content) = (String::new(), String::new());
    for choice in chunks.iter().flat_map(|c| array(&c["choices"])) {
        reasoning.push_str(choice["delta"]["reasoning_content"].as_str().unwrap_or(""));
        content.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
    }
    assert_eq!(reasoning, thought);
    assert_eq!(content, string(&choice["message"]["content"]));

    for (bad, why) in [
        (json!({"thinking_token_budget": -2}), "below -1"),
        (
            json!({"thinking_token_budget": 3, "structured_outputs": {"regex": "a+"}}),
            "beside a grammar",
        ),
    ] {
        let reply = api.send(api.post(CHAT, &thinking_chat(bad))).await;
        assert_eq!(reply.status().as_u16(), 400, "{why}");
        let body: Value = reply.json().await.expect("json");
        assert_eq!(
            body["error"]["param"], "thinking_token_budget",
            "{why}: {body}"
        );
    }
}
