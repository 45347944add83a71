//! `pagoda-server` end to end: the real binary with the default model (SmolLM2-135M-Instruct),
//! driven over HTTP as an OpenAI client would. Chat and text completions, streamed and not,
//! usage, stop strings, `n`, seeds, log-probabilities and concurrent requests.
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`. Requests are
//! greedy (temperature 0) unless a test says otherwise, so answers are deterministic. Each test
//! starts its own server, so a request sent "alone" is alone.

mod common;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use common::server::{sse_data, ServerProcess};

/// The name the server is started with (`--served-model-name`).
const MODEL: &str = "smollm2";
/// Greedy answer: "The capital of France is Paris." then EOS, 8 tokens in all.
const FRANCE: &str = "What is the capital of France?";
/// The chat template's end-of-turn token, the model's EOS.
const EOS_TEXT: &str = "<|im_end|>";
const CHAT: &str = "/v1/chat/completions";
const COMPLETIONS: &str = "/v1/completions";

/// A running server and a client for it.
struct Api {
    server: ServerProcess,
    client: reqwest::Client,
}

impl Api {
    fn start() -> Self {
        let model = common::model_path();
        let model = model.to_str().expect("a UTF-8 path");
        let server = ServerProcess::start(&["--model", model, "--served-model-name", MODEL]);
        let client = reqwest::Client::new();
        Self { server, client }
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client.post(self.server.url(path)).json(body)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        request.send().await.expect("the server answers")
    }

    /// POSTs `body`; the JSON of a 200 answer.
    async fn json(&self, path: &str, body: &Value) -> Value {
        let response = self.send(self.post(path, body)).await;
        ok_json(response, &format!("{path} {body}")).await
    }

    /// POSTs `body` with `"stream": true`; its chunks, once the SSE framing and the final
    /// `[DONE]` are checked.
    async fn sse(&self, path: &str, body: &Value) -> Vec<Value> {
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
    async fn token_ids(&self, prompt: &str, add_special_tokens: bool) -> Vec<Value> {
        let body = json!({"prompt": prompt, "add_special_tokens": add_special_tokens});
        array(&self.json("/tokenize", &body).await["tokens"]).to_vec()
    }

    /// Prompt tokens of a one-message chat, through the chat template.
    async fn chat_prompt_len(&self, question: &str) -> u64 {
        let body = json!({"messages": [{"role": "user", "content": question}]});
        count(&self.json("/tokenize", &body).await["count"])
    }
}

async fn ok_json(response: reqwest::Response, what: &str) -> Value {
    let status = response.status();
    let text = response.text().await.expect("a body");
    assert_eq!(status, StatusCode::OK, "{what}: {text}");
    serde_json::from_str(&text).expect("a JSON body")
}

fn header(response: &reqwest::Response, name: &str) -> String {
    let value = response.headers().get(name);
    let value = value.unwrap_or_else(|| panic!("no {name} header"));
    value.to_str().expect("an ASCII header").to_string()
}

fn string(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

fn count(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not a count: {value}"))
}

fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

fn array(value: &Value) -> &[Value] {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
}

/// A greedy chat request for one user message.
fn chat(question: &str, max_tokens: u64) -> Value {
    json!({"model": MODEL, "messages": [{"role": "user", "content": question}],
        "temperature": 0.0, "max_tokens": max_tokens})
}

/// `base` with the fields of `extra` added (or replaced).
fn with(mut base: Value, extra: Value) -> Value {
    let (Value::Object(base_map), Value::Object(extra)) = (&mut base, extra) else {
        panic!("objects expected");
    };
    base_map.extend(extra);
    base
}

/// The content of a chat response's first choice.
fn content(response: &Value) -> &str {
    string(&response["choices"][0]["message"]["content"])
}

/// The finish reason of a response's first choice.
fn finish_reason(response: &Value) -> &str {
    string(&response["choices"][0]["finish_reason"])
}

/// `(prompt_tokens, completion_tokens, total_tokens)`, checking that the total adds up.
fn counts(usage: &Value) -> (u64, u64, u64) {
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
struct Streamed {
    text: String,
    finish_reasons: Vec<String>,
}

/// Per choice index, from chat (`delta.content`) or text completion (`text`) chunks.
fn streamed_choices(chunks: &[Value]) -> BTreeMap<u64, Streamed> {
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
fn choice_texts<'a>(response: &'a Value) -> Vec<&'a str> {
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

fn unix_now_s() -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH);
    now.expect("after 1970").as_secs()
}

#[tokio::test]
async fn chat_answers_in_openai_shape_and_streams_the_same_answer() {
    let api = Api::start();
    check_models_and_an_unknown_model(&api).await;

    let request = chat(FRANCE, 24);
    let answered = api.send(api.post(CHAT, &request)).await;
    let generated_id = header(&answered, "x-request-id");
    let is_hex = generated_id.chars().all(|c| c.is_ascii_hexdigit());
    assert!(
        generated_id.len() == 32 && is_hex,
        "a generated request id: {generated_id}"
    );
    let response = ok_json(answered, "chat").await;
    check_chat_shape(&response);
    let answer = content(&response);
    assert!(answer.contains("Paris"), "{answer:?}");
    let (prompt_tokens, completion_tokens, _) = counts(&response["usage"]);
    assert_eq!(prompt_tokens, api.chat_prompt_len(FRANCE).await);
    // The engine counts every token it generated, the EOS that ends the turn included, while
    // the content leaves that special token out: one token more than the content re-tokenized
    // when the model stopped by itself, exactly as many when it ran into max_tokens.
    let num_content_tokens = api.token_ids(answer, false).await.len() as u64;
    let num_eos = u64::from(finish_reason(&response) == "stop");
    assert_eq!(
        completion_tokens,
        num_content_tokens + num_eos,
        "{response}"
    );

    // A client's x-request-id is echoed; the answer is the same (its prompt now cached).
    let tagged = api
        .post(CHAT, &request)
        .header("x-request-id", "test-abc-1");
    let tagged = api.send(tagged).await;
    assert_eq!(header(&tagged, "x-request-id"), "test-abc-1");
    assert_eq!(content(&ok_json(tagged, "tagged chat").await), answer);

    check_streamed_chat(&api, &request, &response).await;
}

/// `/v1/models` lists the served name; another name is a 404 in OpenAI's error shape.
async fn check_models_and_an_unknown_model(api: &Api) {
    let models = api.send(api.client.get(api.server.url("/v1/models"))).await;
    let models = ok_json(models, "/v1/models").await;
    assert_eq!(models["object"], "list");
    let listed = array(&models["data"]);
    assert!(
        listed
            .iter()
            .any(|m| m["id"] == MODEL && m["object"] == "model"),
        "{models}"
    );
    let body = with(chat(FRANCE, 4), json!({"model": "other"}));
    let other = api.send(api.post(CHAT, &body)).await;
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    let error: Value = other.json().await.expect("a JSON error");
    assert_eq!(error["error"]["type"], "not_found_error", "{error}");
    assert_eq!(error["error"]["param"], "model");
    assert!(
        string(&error["error"]["message"]).contains("other"),
        "{error}"
    );
}

/// Checks a non-streamed chat response against OpenAI's shape.
fn check_chat_shape(response: &Value) {
    assert!(
        string(&response["id"]).starts_with("chatcmpl-"),
        "{response}"
    );
    assert_eq!(response["object"], "chat.completion");
    let created = count(&response["created"]);
    assert!(
        created.abs_diff(unix_now_s()) < 60,
        "created {created} is now"
    );
    assert_eq!(response["model"], MODEL);
    let choices = array(&response["choices"]);
    assert_eq!(choices.len(), 1);
    assert_eq!(choices[0]["index"], 0);
    assert_eq!(choices[0]["message"]["role"], "assistant");
    assert!(choices[0]["logprobs"].is_null(), "no logprobs unless asked");
    let finish_reason = finish_reason(response);
    assert!(["stop", "length"].contains(&finish_reason), "{response}");
}

/// `request` streamed tells what `response` told, in chunks of OpenAI's shape.
async fn check_streamed_chat(api: &Api, request: &Value, response: &Value) {
    let include_usage = json!({"stream_options": {"include_usage": true}});
    let chunks = api.sse(CHAT, &with(request.clone(), include_usage)).await;
    let id = string(&chunks[0]["id"]);
    assert!(id.starts_with("chatcmpl-"), "{id}");
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        assert_eq!(chunk["id"], id, "one id per stream");
        assert_eq!(chunk["created"], chunks[0]["created"]);
        assert_eq!(chunk["model"], MODEL);
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"]["role"], "assistant",
        "{}",
        chunks[0]
    );
    let (usage_chunk, choice_chunks) = chunks.split_last().expect("chunks");
    assert_eq!(
        usage_chunk["choices"],
        json!([]),
        "the usage chunk last: {usage_chunk}"
    );
    assert_eq!(counts(&usage_chunk["usage"]), counts(&response["usage"]));
    assert!(
        choice_chunks.iter().all(|c| c["usage"].is_null()),
        "usage only at the end"
    );
    let finishing: Vec<usize> = (0..choice_chunks.len())
        .filter(|&i| !choice_chunks[i]["choices"][0]["finish_reason"].is_null())
        .collect();
    assert_eq!(
        finishing,
        [choice_chunks.len() - 1],
        "one finish_reason, in the last chunk"
    );
    let streamed = streamed_choices(choice_chunks);
    assert_eq!(streamed.len(), 1);
    assert_eq!(
        streamed[&0].text,
        content(response),
        "the deltas add up to the answer"
    );
    assert_eq!(streamed[&0].finish_reasons, [finish_reason(response)]);

    // Without include_usage no usage chunk comes.
    let plain = api.sse(CHAT, request).await;
    assert!(
        plain.iter().all(|c| !array(&c["choices"]).is_empty()),
        "{plain:?}"
    );
    assert_eq!(streamed_choices(&plain)[&0].text, content(response));
}

/// A greedy `/v1/completions` request with `ignore_eos`: every choice runs exactly 8 tokens.
fn completion(prompt: Value) -> Value {
    json!({"model": MODEL, "prompt": prompt, "temperature": 0.0, "max_tokens": 8,
        "ignore_eos": true})
}

#[tokio::test]
async fn completions_take_text_or_token_ids_several_prompts_and_n() {
    let api = Api::start();
    let (first, second) = ("The capital of France is", "Once upon a time");
    let first_ids = api.token_ids(first, true).await;
    let second_ids = api.token_ids(second, true).await;

    let by_text = api.json(COMPLETIONS, &completion(json!(first))).await;
    assert!(string(&by_text["id"]).starts_with("cmpl-"), "{by_text}");
    assert_eq!(by_text["object"], "text_completion");
    assert_eq!(by_text["model"], MODEL);
    assert_eq!(finish_reason(&by_text), "length");
    let text = choice_texts(&by_text)[0];
    let by_ids = api.json(COMPLETIONS, &completion(json!(first_ids))).await;
    assert_eq!(
        choice_texts(&by_ids),
        [text],
        "token ids and text are the same prompt"
    );
    let num_first = first_ids.len() as u64;
    assert_eq!(counts(&by_text["usage"]), (num_first, 8, num_first + 8));
    assert_eq!(counts(&by_ids["usage"]), counts(&by_text["usage"]));

    // Two prompts, two choices each: prompt i owns choices 2i and 2i+1, and counts once.
    let both = with(completion(json!([first, second])), json!({"n": 2}));
    let response = api.json(COMPLETIONS, &both).await;
    let texts = choice_texts(&response);
    assert_eq!(texts.len(), 4, "{response}");
    assert_eq!(
        texts[..2],
        [text, text],
        "greedy choices of the first prompt"
    );
    assert!(
        texts[2] == texts[3] && texts[2] != text,
        "the second prompt's: {texts:?}"
    );
    let num_prompt = num_first + second_ids.len() as u64;
    assert_eq!(
        counts(&response["usage"]),
        (num_prompt, 32, num_prompt + 32)
    );

    let include_usage = json!({"stream_options": {"include_usage": true}});
    let chunks = api.sse(COMPLETIONS, &with(both, include_usage)).await;
    let same_stream = |c: &Value| c["object"] == "text_completion" && c["id"] == chunks[0]["id"];
    assert!(chunks.iter().all(same_stream), "{chunks:?}");
    let (usage_chunk, choice_chunks) = chunks.split_last().expect("chunks");
    assert_eq!(counts(&usage_chunk["usage"]), counts(&response["usage"]));
    let streamed = streamed_choices(choice_chunks);
    let streamed_texts: Vec<&str> = streamed.values().map(|s| s.text.as_str()).collect();
    assert_eq!(
        streamed_texts, texts,
        "each streamed choice adds up to its text"
    );
    assert!(
        streamed.values().all(|s| s.finish_reasons == ["length"]),
        "{streamed:?}"
    );

    check_completion_logprobs(&api, first, text).await;
}

/// `logprobs: 2` on `/v1/completions`: one entry per token in four parallel arrays, the same
/// whether streamed or not.
async fn check_completion_logprobs(api: &Api, prompt: &str, text: &str) {
    let request = with(completion(json!(prompt)), json!({"logprobs": 2}));
    let response = api.json(COMPLETIONS, &request).await;
    assert_eq!(choice_texts(&response), [text]);
    let logprobs = &response["choices"][0]["logprobs"];
    let tokens = array(&logprobs["tokens"]);
    assert_eq!(tokens.len(), 8, "every generated token: {logprobs}");
    for name in ["token_logprobs", "top_logprobs", "text_offset"] {
        assert_eq!(
            array(&logprobs[name]).len(),
            8,
            "{name}: one per token: {logprobs}"
        );
    }
    let mut offset = 0;
    for (i, token) in tokens.iter().map(string).enumerate() {
        let logprob = number(&logprobs["token_logprobs"][i]);
        assert!(logprob <= 0.0, "{logprobs}");
        assert_eq!(
            logprobs["text_offset"][i], offset,
            "offsets from the start of the text"
        );
        offset += token.len() as u64;
        let top = logprobs["top_logprobs"][i]
            .as_object()
            .expect("top_logprobs are objects");
        assert_eq!(top.len(), 2, "{top:?}");
        let best = top.values().map(number).fold(f64::MIN, f64::max);
        assert!(
            (best - logprob).abs() <= 1e-5,
            "greedy takes the best: {top:?}"
        );
        assert!(top.contains_key(token), "{token:?} among {top:?}");
    }
    assert_eq!(tokens.iter().map(string).collect::<String>(), text);

    // Streamed, the offsets still count from the start of the choice's text (as OpenAI and
    // vLLM write them), not from the start of each chunk.
    let chunks = api.sse(COMPLETIONS, &request).await;
    let streamed = |name: &str| -> Vec<Value> {
        let of_chunk = |c: &Value| c["choices"][0]["logprobs"][name].as_array().cloned();
        chunks.iter().filter_map(of_chunk).flatten().collect()
    };
    assert_eq!(streamed("tokens"), tokens);
    assert_eq!(
        streamed("text_offset"),
        array(&logprobs["text_offset"]),
        "streamed offsets"
    );
}

#[tokio::test]
async fn stop_strings_and_max_tokens_end_the_answer_where_asked() {
    let api = Api::start();
    let question = "Tell me about the Eiffel Tower.";
    let full = api.json(CHAT, &chat(question, 24)).await;
    let answer = content(&full);
    assert_eq!(finish_reason(&full), "length", "a long answer: {answer:?}");

    // Two words from the middle of the answer: a stop string of several tokens.
    let words: Vec<&str> = answer.split(' ').collect();
    assert!(words.len() >= 5, "{answer:?}");
    let stop = format!("{} {}", words[words.len() / 2], words[words.len() / 2 + 1]);
    assert!(
        api.token_ids(&stop, false).await.len() >= 2,
        "{stop:?} is several tokens"
    );
    let kept = &answer[..answer
        .find(&stop)
        .expect("the stop string is in the answer")];
    assert!(
        !kept.is_empty() && kept.len() + stop.len() < answer.len(),
        "{stop:?} inside"
    );

    let request = with(chat(question, 24), json!({"stop": [stop]}));
    let stopped = api.json(CHAT, &request).await;
    assert_eq!(
        content(&stopped),
        kept,
        "the answer up to the stop string {stop:?}"
    );
    assert_eq!(finish_reason(&stopped), "stop");
    assert!(
        counts(&stopped["usage"]).1 < 24,
        "generation ended at the stop string"
    );
    let streamed = streamed_choices(&api.sse(CHAT, &request).await);
    assert_eq!(
        streamed[&0].text, kept,
        "streamed up to the stop string {stop:?}"
    );
    assert_eq!(streamed[&0].finish_reasons, ["stop"]);

    // A stop string that never completes holds nothing back for good.
    let request = with(chat(question, 24), json!({"stop": ["Eiffel Towers of"]}));
    let unstopped = api.json(CHAT, &request).await;
    assert_eq!(content(&unstopped), answer);
    assert_eq!(finish_reason(&unstopped), "length");

    // max_tokens is exact, with ignore_eos past the EOS too (FRANCE ends by itself).
    let natural = api.json(CHAT, &chat(FRANCE, 24)).await;
    assert_eq!(finish_reason(&natural), "stop");
    let (_, num_natural, _) = counts(&natural["usage"]);
    for max_tokens in [5, num_natural + 4] {
        let request = with(chat(FRANCE, max_tokens), json!({"ignore_eos": true}));
        let response = api.json(CHAT, &request).await;
        assert_eq!(counts(&response["usage"]).1, max_tokens, "{response}");
        assert_eq!(finish_reason(&response), "length");
        let text = content(&response);
        assert!(
            !text.contains(EOS_TEXT),
            "special tokens are skipped: {text:?}"
        );
        let (shorter, longer) = if text.len() < content(&natural).len() {
            (text, content(&natural))
        } else {
            (content(&natural), text)
        };
        assert!(
            longer.starts_with(shorter),
            "{text:?}: the same greedy answer"
        );
    }
}

#[tokio::test]
async fn seeded_sampling_repeats_and_other_seeds_differ() {
    let api = Api::start();
    let question = "Write a short poem about the sea.";
    let sampled = json!({"temperature": 1.0, "seed": 1234, "n": 3});
    let request = with(chat(question, 16), sampled);
    let first = api.json(CHAT, &request).await;
    let texts = choice_texts(&first);
    assert_eq!(texts.len(), 3, "{first}");
    assert!(
        texts[0] != texts[1] || texts[1] != texts[2],
        "the choices differ: {texts:?}"
    );
    let (prompt_tokens, _, _) = counts(&first["usage"]);
    assert_eq!(
        prompt_tokens,
        api.chat_prompt_len(question).await,
        "the prompt counts once"
    );

    let repeated = api.json(CHAT, &request).await;
    assert_eq!(
        choice_texts(&repeated),
        texts,
        "the same seed gives the same choices"
    );
    let streamed = streamed_choices(&api.sse(CHAT, &request).await);
    let streamed: Vec<&str> = streamed.values().map(|s| s.text.as_str()).collect();
    assert_eq!(streamed, texts, "streaming samples the same");

    let reseeded = api.json(CHAT, &with(request, json!({"seed": 4321}))).await;
    assert_ne!(
        choice_texts(&reseeded),
        texts,
        "another seed gives other choices"
    );
}

#[tokio::test]
async fn chat_logprobs_cover_every_generated_token() {
    let api = Api::start();
    let request = with(
        chat(FRANCE, 24),
        json!({"logprobs": true, "top_logprobs": 3}),
    );
    let response = api.json(CHAT, &request).await;
    assert_eq!(
        finish_reason(&response),
        "stop",
        "the answer ends by itself: {response}"
    );
    let entries = array(&response["choices"][0]["logprobs"]["content"]);
    // One entry per token the engine generated and counted, the EOS that ended the turn
    // included (last, as its special-token text), though the content leaves it out.
    let (_, completion_tokens, _) = counts(&response["usage"]);
    assert_eq!(entries.len() as u64, completion_tokens, "{response}");
    let (eos, text_entries) = entries.split_last().expect("entries");
    assert_eq!(eos["token"], EOS_TEXT);
    let joined: String = text_entries.iter().map(|e| string(&e["token"])).collect();
    assert_eq!(joined, content(&response));
    for entry in entries {
        let (token, logprob) = (string(&entry["token"]), number(&entry["logprob"]));
        assert!(logprob <= 0.0, "{entry}");
        assert_eq!(entry["bytes"], json!(token.as_bytes()));
        let top = array(&entry["top_logprobs"]);
        let top_values: Vec<f64> = top.iter().map(|t| number(&t["logprob"])).collect();
        assert_eq!(top.len(), 3, "{entry}");
        assert!(
            top_values.windows(2).all(|w| w[0] >= w[1]),
            "best first: {entry}"
        );
        assert!(top_values.iter().all(|&v| v <= 0.0), "{entry}");
        assert_eq!(top[0]["token"], token, "greedy takes the best: {entry}");
        assert!((top_values[0] - logprob).abs() <= 1e-5, "{entry}");
    }

    let chunks = api.sse(CHAT, &request).await;
    let of_chunk = |c: &Value| c["choices"][0]["logprobs"]["content"].as_array().cloned();
    let streamed: Vec<Value> = chunks.iter().filter_map(of_chunk).flatten().collect();
    assert_eq!(
        streamed.len(),
        entries.len(),
        "streamed logprobs: one per token"
    );
    for (streamed, entry) in streamed.iter().zip(entries) {
        assert_eq!(streamed["token"], entry["token"]);
        let difference = number(&streamed["logprob"]) - number(&entry["logprob"]);
        assert!(difference.abs() <= 1e-4, "{streamed} vs {entry}");
    }
}

/// The text and finish reason of a chat request's only choice, streamed or not.
async fn answer_of(api: &Api, request: &Value, stream: bool) -> (String, String) {
    if stream {
        let mut streamed = streamed_choices(&api.sse(CHAT, request).await);
        let choice = streamed.remove(&0).expect("choice 0");
        assert_eq!(choice.finish_reasons.len(), 1, "{choice:?}");
        (choice.text, choice.finish_reasons[0].clone())
    } else {
        let response = api.json(CHAT, request).await;
        (content(&response).into(), finish_reason(&response).into())
    }
}

#[tokio::test]
async fn concurrent_requests_get_the_answers_they_get_alone() {
    let api = Api::start();
    let questions = [
        FRANCE,
        "What is the capital of Japan?",
        "Name three colors.",
        "What is 2+2?",
        "Who wrote Hamlet?",
        "Describe a cat.",
        "Tell me about the Eiffel Tower.",
        "What is the chemical symbol for water?",
    ];
    // Every other request streams.
    let requests: Vec<(Value, bool)> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| (chat(q, 16), i % 2 == 1))
        .collect();
    let mut alone = Vec::new();
    for (request, stream) in &requests {
        alone.push(answer_of(&api, request, *stream).await);
    }
    // Cold cache again: what differs below is only that the requests share batches.
    api.json("/reset_prefix_cache", &json!({})).await;
    let together = join_all(
        requests
            .iter()
            .map(|(r, stream)| answer_of(&api, r, *stream)),
    )
    .await;
    for ((question, alone), together) in questions.iter().zip(&alone).zip(&together) {
        assert_eq!(together, alone, "{question:?}: batched vs alone");
    }
}
