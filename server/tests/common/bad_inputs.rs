//! A corpus of bad requests and the answer each must get: status, OpenAI error shape, and the
//! `error.param` naming the field at fault where there is one.

use reqwest::{Client, Method};
use serde_json::{json, Value};

use super::api::Reply;

mod front_door;
mod prompts;
mod structured;

#[allow(unused_imports)] // Not every test binary that shares `common` uses it.
pub use prompts::huge_prompt_cases;

pub const CHAT: &str = "/v1/chat/completions";
pub const COMPLETIONS: &str = "/v1/completions";

/// One bad request and what it must be answered.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub method: Method,
    pub path: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    pub status: u16,
    /// The expected `error.param`; `None`: not checked (no single field is at fault).
    pub param: Option<&'static str>,
}

impl Case {
    /// A raw body sent to `path` as `application/json`.
    pub fn raw(
        name: &str,
        path: &'static str,
        body: &[u8],
        status: u16,
        param: Option<&'static str>,
    ) -> Self {
        Self {
            name: name.to_string(),
            method: Method::POST,
            path,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_vec(),
            status,
            param,
        }
    }

    /// A JSON body.
    pub fn json(
        name: &str,
        path: &'static str,
        body: Value,
        status: u16,
        param: Option<&'static str>,
    ) -> Self {
        Self::raw(name, path, body.to_string().as_bytes(), status, param)
    }

    /// A valid chat request with `fields` added (overriding), expected to get 400 on `param`.
    pub fn chat(name: &str, fields: Value, param: &'static str) -> Self {
        Self::json(name, CHAT, merged(valid_chat(), fields), 400, Some(param))
    }

    /// A valid completions request with `fields` added, expected to get 400 on `param`.
    pub fn completion(name: &str, fields: Value, param: &'static str) -> Self {
        Self::json(
            name,
            COMPLETIONS,
            merged(valid_completion(), fields),
            400,
            Some(param),
        )
    }

    /// A bodiless request.
    pub fn bare(name: &str, method: Method, path: &'static str, status: u16) -> Self {
        Self {
            name: name.to_string(),
            method,
            path,
            headers: Vec::new(),
            body: Vec::new(),
            status,
            param: None,
        }
    }

    /// Sends the request; returns what is wrong with the answer, if anything.
    pub async fn check(&self, client: &Client, base_url: &str) -> Result<(), String> {
        let mut request = client.request(self.method.clone(), format!("{base_url}{}", self.path));
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        if !self.body.is_empty() {
            request = request.body(self.body.clone());
        }
        let reply = match request.send().await {
            Ok(response) => Reply::read(response).await,
            Err(e) => return Err(format!("{}: no answer: {e}", self.name)),
        };
        let fail = |what: String| Err(format!("{}: {what}; body: {}", self.name, reply.text()));
        if reply.status.as_u16() != self.status {
            return fail(format!(
                "status {} (expected {})",
                reply.status, self.status
            ));
        }
        let error = match reply.openai_error() {
            Ok(error) => error,
            Err(e) => return fail(e),
        };
        if let Some(param) = self.param {
            if error["param"] != param {
                return fail(format!("param {} (expected {param:?})", error["param"]));
            }
        }
        // A client's mistake must not be described as the server's.
        if reply.status.is_client_error() && error["type"] == "server_error" {
            return fail(format!(
                "a {} answered with type \"server_error\"",
                reply.status
            ));
        }
        Ok(())
    }
}

/// The smallest valid chat request.
pub fn valid_chat() -> Value {
    json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
}

/// The smallest valid completions request.
pub fn valid_completion() -> Value {
    json!({"prompt": "hi", "max_tokens": 4})
}

/// `[model, messages, max_tokens, null, …]`: 31 elements, one per field of a chat request.
fn positional_chat() -> Value {
    let mut fields = vec![
        Value::Null,
        json!([{"role": "user", "content": "hi"}]),
        json!(3),
    ];
    fields.resize(31, Value::Null);
    Value::Array(fields)
}

fn merged(mut base: Value, fields: Value) -> Value {
    if let (Some(base), Some(fields)) = (base.as_object_mut(), fields.as_object()) {
        for (key, value) in fields {
            base.insert(key.clone(), value.clone());
        }
    }
    base
}

/// Malformed, mistyped and unsupported bodies, wrong routes and methods: everything that needs
/// no particular server flag. `vocab_size` is the served tokenizer's.
pub fn corpus(vocab_size: u32) -> Vec<Case> {
    let mut cases = syntax_cases();
    cases.extend(type_cases());
    cases.extend(range_cases());
    cases.extend(unsupported_cases());
    cases.extend(routing_cases());
    cases.extend(prompts::prompt_cases(vocab_size));
    cases.extend(front_door::media_type_cases());
    cases.extend(front_door::logit_bias_cases(vocab_size));
    cases.extend(front_door::restriction_cases(vocab_size));
    cases.extend(front_door::role_cases());
    cases.extend(structured::structured_output_cases());
    cases.extend(structured::unsupported_vllm_field_cases());
    cases
}

fn syntax_cases() -> Vec<Case> {
    vec![
        Case::raw(
            "malformed JSON",
            CHAT,
            br#"{"messages": [}]}"#,
            400,
            Some("body"),
        ),
        Case::raw(
            "not JSON at all",
            COMPLETIONS,
            b"prompt=hi",
            400,
            Some("body"),
        ),
        Case::raw(
            "truncated JSON",
            CHAT,
            br#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":"#,
            400,
            Some("body"),
        ),
        Case::raw("empty body", CHAT, b"", 400, Some("body")),
        Case::raw(
            "JSON array, not an object",
            CHAT,
            b"[1, 2, 3]",
            400,
            Some("body"),
        ),
        Case::raw(
            "JSON number, not an object",
            COMPLETIONS,
            b"42",
            400,
            Some("body"),
        ),
        Case::raw("JSON null, not an object", CHAT, b"null", 400, Some("body")),
        // serde reads a struct from an array too, field by field: an array as long as the
        // request has fields must not pass for a request.
        Case::json(
            "JSON array of positional fields",
            CHAT,
            positional_chat(),
            400,
            Some("body"),
        ),
        Case::raw(
            "invalid UTF-8 in a string",
            CHAT,
            b"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe hi\"}]}",
            400,
            Some("body"),
        ),
        Case::json(
            "chat without messages",
            CHAT,
            json!({"max_tokens": 4}),
            400,
            None,
        ),
        Case::json(
            "completion without prompt",
            COMPLETIONS,
            json!({"max_tokens": 4}),
            400,
            None,
        ),
    ]
}

fn type_cases() -> Vec<Case> {
    vec![
        Case::chat(
            "messages as a string",
            json!({"messages": "hi"}),
            "messages",
        ),
        Case::chat(
            "temperature \"hot\"",
            json!({"temperature": "hot"}),
            "temperature",
        ),
        Case::chat("max_tokens -1", json!({"max_tokens": -1}), "max_tokens"),
        Case::completion(
            "max_tokens -1 (completions)",
            json!({"max_tokens": -1}),
            "max_tokens",
        ),
        Case::chat("n \"2\"", json!({"n": "2"}), "n"),
        Case::chat("stop 5", json!({"stop": 5}), "stop"),
        Case::completion("stop 5 (completions)", json!({"stop": 5}), "stop"),
        Case::chat("stream \"yes\"", json!({"stream": "yes"}), "stream"),
    ]
}

fn range_cases() -> Vec<Case> {
    vec![
        Case::chat("temperature -1", json!({"temperature": -1}), "temperature"),
        Case::chat("temperature 3", json!({"temperature": 3}), "temperature"),
        Case::completion(
            "temperature 3 (completions)",
            json!({"temperature": 3}),
            "temperature",
        ),
        Case::chat("top_p 0", json!({"top_p": 0}), "top_p"),
        Case::chat("top_p 1.5", json!({"top_p": 1.5}), "top_p"),
        Case::chat("top_k -7", json!({"top_k": -7}), "top_k"),
        Case::chat("n 0", json!({"n": 0}), "n"),
        Case::chat("n 1000", json!({"n": 1000}), "n"),
        Case::chat("max_tokens 0", json!({"max_tokens": 0}), "max_tokens"),
        Case::completion(
            "max_tokens 0 (completions)",
            json!({"max_tokens": 0}),
            "max_tokens",
        ),
        Case::chat(
            "presence_penalty 5",
            json!({"presence_penalty": 5}),
            "presence_penalty",
        ),
        Case::chat(
            "frequency_penalty -3",
            json!({"frequency_penalty": -3}),
            "frequency_penalty",
        ),
        Case::chat(
            "top_logprobs 50",
            json!({"logprobs": true, "top_logprobs": 50}),
            "top_logprobs",
        ),
        Case::completion(
            "logprobs 30 on completions",
            json!({"logprobs": 30}),
            "logprobs",
        ),
        Case::chat(
            "min_tokens > max_tokens",
            json!({"min_tokens": 10, "max_tokens": 5}),
            "min_tokens",
        ),
        // Any 64-bit integer is a seed (-1 too, as OpenAI and vLLM take); nothing else is.
        Case::chat(
            "seed 2^64",
            json!({"seed": 18_446_744_073_709_551_616.0_f64}),
            "seed",
        ),
        Case::chat("seed 1.5", json!({"seed": 1.5}), "seed"),
        Case::chat(
            "stream_options without stream",
            json!({"stream_options": {"include_usage": true}}),
            "stream_options",
        ),
        Case::chat("empty stop string", json!({"stop": [""]}), "stop"),
    ]
}

fn unsupported_cases() -> Vec<Case> {
    let image = json!([{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]}]);
    vec![
        Case::chat("empty messages", json!({"messages": []}), "messages"),
        Case::chat(
            "image_url content part",
            json!({"messages": image}),
            "messages",
        ),
        Case::completion(
            "prompt_logprobs above 20",
            json!({"prompt_logprobs": 21}),
            "prompt_logprobs",
        ),
        Case::chat(
            "prompt_logprobs with stream",
            json!({"prompt_logprobs": 0, "stream": true}),
            "prompt_logprobs",
        ),
    ]
}

fn routing_cases() -> Vec<Case> {
    vec![
        Case::json(
            "unknown model (chat)",
            CHAT,
            merged(valid_chat(), json!({"model": "gpt-9"})),
            404,
            Some("model"),
        ),
        Case::json(
            "unknown model (completions)",
            COMPLETIONS,
            merged(valid_completion(), json!({"model": "gpt-9"})),
            404,
            Some("model"),
        ),
        Case::bare("unknown route", Method::GET, "/v1/nope", 404),
        Case::json(
            "unknown route (POST)",
            "/v1/engines/x/completions",
            valid_completion(),
            404,
            None,
        ),
        Case::bare("GET on chat completions", Method::GET, CHAT, 405),
        Case::bare("DELETE on /v1/models", Method::DELETE, "/v1/models", 405),
        Case::bare("PUT on completions", Method::PUT, COMPLETIONS, 405),
    ]
}

/// Sends every case in turn; returns one line per wrong answer.
pub async fn run(client: &Client, base_url: &str, cases: &[Case]) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        if let Err(failure) = case.check(client, base_url).await {
            failures.push(failure);
        }
    }
    failures
}

/// Asserts that no case failed, listing every failure at once.
pub fn assert_all_passed(failures: &[String], num_cases: usize) {
    assert!(
        failures.is_empty(),
        "{} of {num_cases} bad-input cases got a wrong answer:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
