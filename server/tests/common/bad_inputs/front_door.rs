//! The bad inputs of the hardened front door: bodies a browser could send without a CORS
//! preflight (415), bytes after the JSON (400), mistyped or out-of-range `logit_bias`,
//! `allowed_token_ids`, `bad_words` and `logprob_token_ids` (400) and
//! roles outside OpenAI's set (400 naming `messages[i].role`) and messages without the content
//! their role requires (400 naming `messages[i].content`).

use serde_json::json;

use super::{valid_chat, valid_completion, Case, CHAT, COMPLETIONS};

/// A valid chat body sent with `content_type` (none when `None`).
fn chat_as(name: &str, content_type: Option<&str>) -> Case {
    Case {
        headers: content_type
            .map(|t| vec![("content-type", t.to_string())])
            .unwrap_or_default(),
        ..Case::json(name, CHAT, valid_chat(), 415, Some("Content-Type"))
    }
}

/// Bodies a browser can send without a CORS preflight, and bodies with bytes after the JSON.
pub fn media_type_cases() -> Vec<Case> {
    vec![
        chat_as("text/plain body", Some("text/plain")),
        chat_as("form body", Some("application/x-www-form-urlencoded")),
        chat_as("multipart body", Some("multipart/form-data; boundary=x")),
        chat_as("no content-type", None),
        Case {
            headers: vec![("content-type", "text/plain;charset=UTF-8".into())],
            ..Case::json(
                "text/plain completion",
                COMPLETIONS,
                valid_completion(),
                415,
                Some("Content-Type"),
            )
        },
        Case {
            headers: vec![("content-type", "text/plain".into())],
            ..Case::json(
                "text/plain tokenize",
                "/tokenize",
                json!({"prompt": "hi"}),
                415,
                Some("Content-Type"),
            )
        },
        Case::raw(
            "trailing garbage after the JSON",
            CHAT,
            br#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":4} garbage"#,
            400,
            Some("body"),
        ),
        Case::raw(
            "two JSON objects",
            COMPLETIONS,
            br#"{"prompt":"hi","max_tokens":4}{"prompt":"again"}"#,
            400,
            Some("body"),
        ),
    ]
}

pub fn logit_bias_cases(vocab_size: u32) -> Vec<Case> {
    let out_of_vocab = json!({ vocab_size.to_string(): 5 });
    vec![
        Case::chat(
            "logit_bias a string",
            json!({"logit_bias": "x"}),
            "logit_bias",
        ),
        Case::chat(
            "logit_bias a list",
            json!({"logit_bias": [1, 2]}),
            "logit_bias",
        ),
        Case::chat(
            "logit_bias key not an id",
            json!({"logit_bias": {"a": 1}}),
            "logit_bias",
        ),
        Case::chat(
            "logit_bias value a string",
            json!({"logit_bias": {"1": "5"}}),
            "logit_bias",
        ),
        Case::chat(
            "logit_bias over 100",
            json!({"logit_bias": {"1": 100.5}}),
            "logit_bias",
        ),
        Case::completion(
            "logit_bias under -100",
            json!({"logit_bias": {"1": -101}}),
            "logit_bias",
        ),
        Case::chat(
            "logit_bias id beyond the vocabulary",
            json!({"logit_bias": out_of_vocab}),
            "logit_bias",
        ),
        Case::completion(
            "logit_bias id beyond the vocabulary (completions)",
            json!({"logit_bias": out_of_vocab}),
            "logit_bias",
        ),
    ]
}

/// vLLM's vocabulary restrictions given wrongly.
pub fn restriction_cases(vocab_size: u32) -> Vec<Case> {
    vec![
        Case::completion(
            "allowed_token_ids a string",
            json!({"allowed_token_ids": "1,2"}),
            "allowed_token_ids",
        ),
        Case::chat(
            "allowed_token_ids negative",
            json!({"allowed_token_ids": [-1]}),
            "allowed_token_ids[0]",
        ),
        Case::chat(
            "allowed_token_ids empty",
            json!({"allowed_token_ids": []}),
            "allowed_token_ids",
        ),
        Case::completion(
            "allowed_token_ids beyond the vocabulary",
            json!({"allowed_token_ids": [1, vocab_size]}),
            "allowed_token_ids",
        ),
        Case::chat(
            "bad_words a string",
            json!({"bad_words": "no"}),
            "bad_words",
        ),
        Case::completion(
            "bad_words holding numbers",
            json!({"bad_words": [1, 2]}),
            "bad_words[0]",
        ),
        Case::chat(
            "bad_words holding an empty string",
            json!({"bad_words": ["no", ""]}),
            "bad_words",
        ),
        Case::completion(
            "bad_words of blanks only",
            json!({"bad_words": ["  "]}),
            "bad_words",
        ),
        Case::chat(
            "repetition_detection with min above max",
            json!({"repetition_detection": {"min_pattern_size": 4, "max_pattern_size": 2, "min_count": 3}}),
            "repetition_detection",
        ),
        Case::completion(
            "repetition_detection counting one copy",
            json!({"repetition_detection": {"max_pattern_size": 4, "min_count": 1}}),
            "repetition_detection",
        ),
        Case::completion(
            "repetition_detection patterns too long",
            json!({"repetition_detection": {"max_pattern_size": 5000, "min_count": 2}}),
            "repetition_detection",
        ),
        Case::chat(
            "repetition_detection a number",
            json!({"repetition_detection": 3}),
            "repetition_detection",
        ),
        Case::chat(
            "logprob_token_ids without logprobs",
            json!({"logprob_token_ids": [1]}),
            "logprob_token_ids",
        ),
        Case::completion(
            "logprob_token_ids beyond the vocabulary",
            json!({"logprobs": 1, "logprob_token_ids": [vocab_size]}),
            "logprob_token_ids",
        ),
        Case::completion(
            "logprob_token_ids with nothing generated",
            json!({"logprobs": 1, "echo": true, "max_tokens": 0, "logprob_token_ids": [1]}),
            "logprob_token_ids",
        ),
        Case::chat(
            "prediction of another type",
            json!({"prediction": {"type": "image", "content": "x"}}),
            "prediction.type",
        ),
        Case::chat(
            "prediction a string",
            json!({"prediction": "the answer"}),
            "prediction",
        ),
        Case::chat(
            "prediction with an image part",
            json!({"prediction": {"type": "content", "content": [{"type": "image_url"}]}}),
            "prediction.content",
        ),
    ]
}

/// Roles outside OpenAI's set, the template's own markup among them, and messages without the
/// content or call id their role requires (OpenAI answers 400 naming `messages[i].content` or
/// `messages[i].tool_call_id`).
pub fn role_cases() -> Vec<Case> {
    let roles = ["<|im_start|>", "system\n", "ass\u{0}istant", "", "USER", "narrator"]
        .into_iter()
        .map(|role| {
            Case::chat(
                &format!("role {role:?}"),
                json!({"messages": [{"role": "user", "content": "hi"}, {"role": role, "content": "x"}]}),
                "messages[1].role",
            )
        });
    let contents = [
        json!({"role": "user"}),
        json!({"role": "system", "content": null}),
        json!({"role": "assistant"}),
    ]
    .into_iter()
    .map(|message| {
        Case::chat(
            &format!("message without content {message}"),
            json!({"messages": [{"role": "user", "content": "hi"}, message]}),
            "messages[1].content",
        )
    });
    let tool_call_id = Case::chat(
        "tool message without tool_call_id",
        json!({"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "42"}]}),
        "messages[1].tool_call_id",
    );
    roles.chain(contents).chain([tool_call_id]).collect()
}
