//! The default-model HTTP tests' client: a server started with the default model, requests and
//! the accessors that check a response's shape as they read it.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::server::{sse_data, ServerProcess};

/// The name the server is started with (`--served-model-name`).
pub const MODEL: &str = "smollm2";
/// Greedy answer: "The capital of France is Paris." then EOS, 8 tokens in all.
pub const FRANCE: &str = "What is the capital of France?";
/// The chat template's end-of-turn token, the model's EOS.
pub const EOS_TEXT: &str = "<|im_end|>";
pub const CHAT: &str = "/v1/chat/completions";
pub const COMPLETIONS: &str = "/v1/completions";

/// A running server and a client for it.
pub struct Api {
    pub server: ServerProcess,
    pub client: reqwest::Client,
}

impl Api {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// The server with more flags.
    pub fn start_with(flags: &[&str]) -> Self {
        let model = super::model_path();
        let model = model.to_str().expect("a UTF-8 path");
        let base = ["--model", model, "--served-model-name", MODEL];
        let server = ServerProcess::start(&[&base[..], flags].concat());
        let client = reqwest::Client::new();
        Self { server, client }
    }

    pub fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client.post(self.server.url(path)).json(body)
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        request.send().await.expect("the server answers")
    }

    /// POSTs `body`; the JSON of a 200 answer.
    pub async fn json(&self, path: &str, body: &Value) -> Value {
        let response = self.send(self.post(path, body)).await;
        ok_json(response, &format!("{path} {body}")).await
    }

    /// POSTs `body` with `"stream": true`; its chunks, once the SSE framing and the final
    /// `[DONE]` are checked.
    pub async fn sse(&self, path: &str, body: &Value) -> Vec<Value> {
        let body = with(body.clone(), json!({"stream": true}));
        let response = self.send(self.post(path, &body)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path} {body}");
        let content_type = header(&response, "content-type");
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        let text = response.text().await.expect("the stream completes");
        let mut data = sse_data(&text);
        assert_eq!(
            data.pop().as_deref(),
            Some("[DONE]"),
            "ends with [DONE]: {text}"
        );
        let parse = |d: &String| serde_json::from_str(d).unwrap_or_else(|e| panic!("{d}: {e}"));
        data.iter().map(parse).collect()
    }

    /// `POST /tokenize` of `prompt`.
    pub async fn token_ids(&self, prompt: &str, add_special_tokens: bool) -> Vec<Value> {
        let body = json!({"prompt": prompt, "add_special_tokens": add_special_tokens});
        array(&self.json("/tokenize", &body).await["tokens"]).to_vec()
    }

    /// Prompt tokens of a one-message chat, through the chat template.
    pub async fn chat_prompt_len(&self, question: &str) -> u64 {
        let body = json!({"messages": [{"role": "user", "content": question}]});
        count(&self.json("/tokenize", &body).await["count"])
    }
}

pub async fn ok_json(response: reqwest::Response, what: &str) -> Value {
    let status = response.status();
    let text = response.text().await.expect("a body");
    assert_eq!(status, StatusCode::OK, "{what}: {text}");
    serde_json::from_str(&text).expect("a JSON body")
}

pub fn header(response: &reqwest::Response, name: &str) -> String {
    let value = response.headers().get(name);
    let value = value.unwrap_or_else(|| panic!("no {name} header"));
    value.to_str().expect("an ASCII header").to_string()
}

pub fn string(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

pub fn count(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not a count: {value}"))
}

pub fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

pub fn array(value: &Value) -> &[Value] {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
}

/// A greedy chat request for one user message.
pub fn chat(question: &str, max_tokens: u64) -> Value {
    json!({"model": MODEL, "messages": [{"role": "user", "content": question}],
        "temperature": 0.0, "max_tokens": max_tokens})
}

/// `base` with the fields of `extra` added (or replaced).
pub fn with(mut base: Value, extra: Value) -> Value {
    let (Value::Object(base_map), Value::Object(extra)) = (&mut base, extra) else {
        panic!("objects expected");
    };
    base_map.extend(extra);
    base
}

/// The content of a chat response's first choice.
pub fn content(response: &Value) -> &str {
    string(&response["choices"][0]["message"]["content"])
}

/// The finish reason of a response's first choice.
pub fn finish_reason(response: &Value) -> &str {
    string(&response["choices"][0]["finish_reason"])
}

/// `(prompt_tokens, completion_tokens, total_tokens)`, checking that the total adds up.
pub fn counts(usage: &Value) -> (u64, u64, u64) {
    let field = |name: &str| count(&usage[name]);
    let counts = (
        field("prompt_tokens"),
        field("completion_tokens"),
        field("total_tokens"),
    );
    assert_eq!(counts.0 + counts.1, counts.2, "usage adds up: {usage}");
    counts
}

/// One choice as a stream told it.
#[derive(Debug, Default, PartialEq)]
pub struct Streamed {
    pub text: String,
    pub finish_reasons: Vec<String>,
}

/// Per choice index, from chat (`delta.content`) or text completion (`text`) chunks.
pub fn streamed_choices(chunks: &[Value]) -> BTreeMap<u64, Streamed> {
    let mut choices = BTreeMap::<u64, Streamed>::new();
    for choice in chunks.iter().flat_map(|c| array(&c["choices"])) {
        let entry = choices.entry(count(&choice["index"])).or_default();
        let text = choice["delta"]["content"]
            .as_str()
            .or(choice["text"].as_str());
        entry.text.push_str(text.unwrap_or_default());
        if let Some(reason) = choice["finish_reason"].as_str() {
            entry.finish_reasons.push(reason.to_string());
        }
    }
    choices
}

/// The texts of a response's choices, checking they come in index order.
pub fn choice_texts<'a>(response: &'a Value) -> Vec<&'a str> {
    let choices = array(&response["choices"]);
    for (position, choice) in choices.iter().enumerate() {
        assert_eq!(
            choice["index"], position,
            "choices in index order: {response}"
        );
    }
    let text = |c: &'a Value| c["text"].as_str().or(c["message"]["content"].as_str());
    choices.iter().map(|c| text(c).expect("a text")).collect()
}

pub fn unix_now_s() -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH);
    now.expect("after 1970").as_secs()
}
