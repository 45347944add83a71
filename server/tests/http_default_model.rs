//! `pagoda-server` end to end: the real binary with the default model (SmolLM2-135M-Instruct),
//! driven over HTTP as an OpenAI client would: chat and text completions, streamed and not, their
//! shapes and usage. (Stop strings, seeds, `n`, logprobs and concurrency are in
//! `http_default_model_sampling.rs`.)
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`. Requests are
//! greedy (temperature 0) unless a test says otherwise, so answers are deterministic. Each test
//! starts its own server, so a request sent "alone" is alone.

mod common;

use reqwest::StatusCode;
use serde_json::{json, Value};

use common::default_model_api::*;

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

/// `/v1/models` lists the served name and `/v1/models/{name}` gets it; another name is a 404 in
/// OpenAI's error shape.
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
    let one = api
        .send(
            api.client
                .get(api.server.url(&format!("/v1/models/{MODEL}"))),
        )
        .await;
    assert_eq!(ok_json(one, "/v1/models/{model}").await, listed[0]);
    let missing = api
        .send(api.client.get(api.server.url("/v1/models/org/other")))
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let error: Value = missing.json().await.expect("a JSON error");
    assert_eq!(error["error"]["code"], "model_not_found", "{error}");
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
