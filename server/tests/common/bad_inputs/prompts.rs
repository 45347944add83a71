//! The bad prompts: empty ones, token ids outside the vocabulary, and prompts longer than the
//! model's context.

use serde_json::json;

use super::{Case, CHAT, COMPLETIONS};

/// Prompts of no tokens or of ids outside the vocabulary (`vocab_size` is the served one's).
pub fn prompt_cases(vocab_size: u32) -> Vec<Case> {
    vec![
        Case::completion("empty prompt list", json!({"prompt": []}), "prompt"),
        Case::completion("empty prompt text", json!({"prompt": ""}), "prompt"),
        Case::completion(
            "an empty token list among prompts",
            json!({"prompt": [[1, 2], []]}),
            "prompt",
        ),
        Case::completion(
            "token id beyond the vocabulary",
            json!({"prompt": [1, vocab_size + 7]}),
            "prompt",
        ),
        Case::completion(
            "token id = vocabulary size",
            json!({"prompt": [vocab_size]}),
            "prompt",
        ),
        Case::chat(
            "stop_token_ids beyond the vocabulary",
            json!({"stop_token_ids": [vocab_size + 1]}),
            "stop_token_ids",
        ),
        Case::json(
            "detokenize beyond the vocabulary",
            "/detokenize",
            json!({"tokens": [vocab_size + 3]}),
            400,
            Some("tokens"),
        ),
    ]
}

/// Prompts longer than `max_model_len` (which the server must have been started with).
pub fn huge_prompt_cases(max_model_len: usize) -> Vec<Case> {
    let huge = "hello ".repeat(max_model_len * 2);
    let near = "a".repeat(max_model_len * 3 / 4);
    vec![
        Case::json(
            "huge chat prompt",
            CHAT,
            json!({"messages": [{"role": "user", "content": huge}], "max_tokens": 4}),
            400,
            Some("messages"),
        ),
        Case::json(
            "huge completions prompt",
            COMPLETIONS,
            json!({"prompt": huge, "max_tokens": 4}),
            400,
            Some("prompt"),
        ),
        Case::json(
            "huge completions prompt, no max_tokens",
            COMPLETIONS,
            json!({"prompt": huge}),
            400,
            Some("prompt"),
        ),
        Case::json(
            "prompt + max_tokens > max_model_len",
            COMPLETIONS,
            json!({"prompt": near, "max_tokens": max_model_len}),
            400,
            Some("prompt"),
        ),
    ]
}
