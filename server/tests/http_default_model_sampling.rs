//! `pagoda-server` end to end with the default model, continued: stop strings and `max_tokens`,
//! seeds and `n`, log-probabilities, and concurrent requests (see `http_default_model.rs`).

mod common;

use futures_util::future::join_all;
use serde_json::{json, Value};

use common::default_model_api::*;

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
    let chunks = api.sse(CHAT, &request).await;
    let streamed = streamed_choices(&chunks);
    assert_eq!(
        streamed[&0].text, kept,
        "streamed up to the stop string {stop:?}"
    );
    assert_eq!(streamed[&0].finish_reasons, ["stop"]);
    // One content delta per generated token, as vLLM streams: text held back while it may
    // become the stop string goes out as empty deltas, never as a gap.
    let token_deltas = chunks
        .iter()
        .flat_map(|c| array(&c["choices"]))
        .filter(|c| c["delta"]["role"].is_null() && c["delta"]["content"].is_string())
        .count();
    assert_eq!(
        token_deltas as u64,
        counts(&stopped["usage"]).1,
        "{chunks:?}"
    );

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
    // The streamed request reuses the first one's cached prompt blocks, so the rest of its
    // prompt runs in a smaller batch whose last bits differ, and rounding keys and values to the
    // f16 KV cache can turn that into an f16 ulp: measured 3.3e-4 at most (1.4e-5 with
    // --kv-cache-dtype f32; 0 with prefix caching off).
    for (streamed, entry) in streamed.iter().zip(entries) {
        assert_eq!(streamed["token"], entry["token"]);
        let difference = number(&streamed["logprob"]) - number(&entry["logprob"]);
        assert!(difference.abs() <= 1e-3, "{streamed} vs {entry}");
    }
}

/// `--max-logprobs -1` (vLLM's "the whole vocabulary"): a thousand alternatives per token, best
/// first, the greedy token at the top.
#[tokio::test]
async fn a_raised_max_logprobs_returns_that_many_alternatives() {
    let api = Api::start_with(&["--max-logprobs", "-1"]);
    let request = with(
        chat(FRANCE, 3),
        json!({"logprobs": true, "top_logprobs": 1000}),
    );
    let response = api.json(CHAT, &request).await;
    let entries = array(&response["choices"][0]["logprobs"]["content"]);
    assert_eq!(entries.len(), 3, "{response}");
    for entry in entries {
        let top = array(&entry["top_logprobs"]);
        assert_eq!(top.len(), 1000);
        let values: Vec<f64> = top.iter().map(|t| number(&t["logprob"])).collect();
        assert!(values.windows(2).all(|w| w[0] >= w[1]), "best first");
        assert_eq!(top[0]["token"], entry["token"], "greedy takes the best");
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

/// A stop token's text is not part of the answer (as in vLLM), nor a stop string; with
/// `include_stop_str_in_output` both are, and what follows is still cut.
#[tokio::test]
async fn stop_tokens_and_strings_stay_out_of_the_text_unless_included() {
    let api = Api::start();
    let question = "Tell me about the Eiffel Tower.";
    let full = api.json(CHAT, &chat(question, 24)).await;
    let answer = content(&full).to_string();
    let ids = api.token_ids(&answer, false).await;
    assert!(ids.len() >= 8, "{answer:?}");
    // A token of the answer's middle that the answer has not used before.
    let position = (4..ids.len() - 2)
        .find(|&i| !ids[..i].contains(&ids[i]))
        .expect("a token new to the answer");
    let stop_id = ids[position].clone();
    let by_token = |include: bool| {
        with(
            chat(question, 24),
            json!({"stop_token_ids": [stop_id], "include_stop_str_in_output": include}),
        )
    };
    let excluded = api.json(CHAT, &by_token(false)).await;
    let included = api.json(CHAT, &by_token(true)).await;
    for response in [&excluded, &included] {
        assert_eq!(finish_reason(response), "stop", "{response}");
        assert!(answer.starts_with(content(response)), "{response}");
    }
    assert_eq!(
        counts(&excluded["usage"]).1,
        counts(&included["usage"]).1,
        "the stop token is generated (and counted) either way"
    );
    let token_text = &content(&included)[content(&excluded).len()..];
    assert!(
        content(&included).starts_with(content(&excluded)) && !token_text.is_empty(),
        "{excluded} / {included}"
    );
    let streamed = streamed_choices(&api.sse(CHAT, &by_token(false)).await);
    assert_eq!(streamed[&0].text, content(&excluded));

    let words: Vec<&str> = answer.split(' ').collect();
    let stop = words[words.len() / 2].to_string();
    let kept = &answer[..answer.find(&stop).expect("in the answer")];
    let request = with(
        chat(question, 24),
        json!({"stop": [stop], "include_stop_str_in_output": true}),
    );
    let response = api.json(CHAT, &request).await;
    assert_eq!(content(&response), format!("{kept}{stop}"));
    let streamed = streamed_choices(&api.sse(CHAT, &request).await);
    assert_eq!(streamed[&0].text, format!("{kept}{stop}"));
}

/// vLLM's `continue_final_message`: the prompt ends inside the final (assistant) message and the
/// answer goes on from there; `/tokenize` counts the same prompt.
#[tokio::test]
async fn continue_final_message_goes_on_with_the_last_message() {
    let api = Api::start();
    let messages = json!([
        {"role": "user", "content": FRANCE},
        {"role": "assistant", "content": "The capital of France is"},
    ]);
    let body = json!({"model": MODEL, "messages": messages, "max_tokens": 8, "temperature": 0,
        "add_generation_prompt": false, "continue_final_message": true});
    let response = api.json(CHAT, &body).await;
    let answer = content(&response);
    assert!(answer.contains("Paris"), "{response}");
    let tokenize = |flags: Value| with(json!({"model": MODEL, "messages": messages}), flags);
    let open = api
        .json(
            "/tokenize",
            &tokenize(json!({"continue_final_message": true})),
        )
        .await;
    let closed = api
        .json(
            "/tokenize",
            &tokenize(json!({"add_generation_prompt": false})),
        )
        .await;
    assert_eq!(count(&open["count"]), counts(&response["usage"]).0);
    assert!(
        count(&open["count"]) < count(&closed["count"]),
        "{open} / {closed}"
    );
    let both = with(body, json!({"add_generation_prompt": true}));
    let refused = api.send(api.post(CHAT, &both)).await;
    assert_eq!(refused.status(), reqwest::StatusCode::BAD_REQUEST);
}

/// A streamed completion sends one chunk per generated token, the last one carrying the
/// `finish_reason` (as vLLM's server does): a client that times every chunk, as vLLM's does on
/// completions, sees no extra empty finish chunk.
#[tokio::test]
async fn streamed_completions_carry_the_finish_on_the_last_token() {
    let api = Api::start();
    for (extra, reason) in [
        (json!({"max_tokens": 12, "ignore_eos": true}), "length"),
        (json!({"max_tokens": 64}), "stop"),
        (
            json!({"max_tokens": 12, "ignore_eos": true, "n": 2}),
            "length",
        ),
    ] {
        let body = with(
            json!({"model": MODEL, "prompt": "The capital of France is", "temperature": 0,
                "stream": true, "stream_options": {"include_usage": true}}),
            extra.clone(),
        );
        let chunks = api.sse(COMPLETIONS, &body).await;
        let n = extra["n"].as_u64().unwrap_or(1);
        let choices: Vec<&Value> = chunks.iter().flat_map(|c| array(&c["choices"])).collect();
        let completion_tokens = counts(&chunks.last().expect("usage")["usage"]).1;
        let finishes: Vec<&Value> = choices
            .iter()
            .filter(|c| !c["finish_reason"].is_null())
            .copied()
            .collect();
        assert_eq!(finishes.len() as u64, n, "{extra}: {chunks:?}");
        assert!(
            finishes.iter().all(|c| c["finish_reason"] == reason),
            "{extra}"
        );
        if n == 1 {
            assert_eq!(
                choices.len() as u64,
                completion_tokens,
                "{extra}: {chunks:?}"
            );
            assert!(!string(&finishes[0]["text"]).is_empty() || reason == "stop");
        } else {
            // Several choices: each one's end may come after another's token, then alone.
            assert!(choices.len() as u64 <= completion_tokens + n, "{extra}");
        }
    }
    // Chat too: after the opening (role) chunk, one chunk per token, the last with the finish.
    let body = with(
        chat(FRANCE, 12),
        json!({"ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}),
    );
    let chunks = api.sse(CHAT, &body).await;
    let choices: Vec<&Value> = chunks.iter().flat_map(|c| array(&c["choices"])).collect();
    assert_eq!(choices.len() as u64, 1 + 12, "{chunks:?}");
    let last = choices.last().expect("chunks");
    assert_eq!(last["finish_reason"], "length");
    assert!(last["delta"]["content"].is_string(), "{last}");
}
