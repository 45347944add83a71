//! vLLM's `repetition_detection` on the default model over HTTP: greedy decoding of a repetitive
//! prompt loops until `max_tokens`; with detection the answer ends as soon as the loop is caught,
//! with finish reason `repetition` (full and streamed), and the metric counts it.

mod common;

use serde_json::{json, Value};

use common::default_model_api::*;

const MAX_TOKENS: u64 = 48;

fn looping_prompt() -> Value {
    json!({"model": MODEL, "prompt": "go go go go go go go go go go go go", "max_tokens": MAX_TOKENS,
        "temperature": 0})
}

fn detection() -> Value {
    json!({"repetition_detection": {"max_pattern_size": 8, "min_count": 3}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_answer_ends_with_repetition() {
    let api = Api::start();
    let free = api.json(COMPLETIONS, &looping_prompt()).await;
    let free_text = string(&free["choices"][0]["text"]).to_string();
    assert_eq!(
        finish_reason(&free),
        "length",
        "the premise: it loops: {free_text:?}"
    );

    let caught = api
        .json(COMPLETIONS, &with(looping_prompt(), detection()))
        .await;
    assert_eq!(finish_reason(&caught), "repetition", "{caught}");
    assert_eq!(caught["choices"][0]["stop_reason"], "repetition_detected");
    let (_, num_completion, _) = counts(&caught["usage"]);
    assert!(
        (3..MAX_TOKENS).contains(&num_completion),
        "at least three copies of a pattern, and early: {num_completion}"
    );
    // The same greedy tokens up to the point of detection.
    let caught_text = string(&caught["choices"][0]["text"]);
    assert!(
        free_text.starts_with(caught_text),
        "{caught_text:?} / {free_text:?}"
    );

    let chunks = api
        .sse(COMPLETIONS, &with(looping_prompt(), detection()))
        .await;
    let streamed = &streamed_choices(&chunks)[&0];
    assert_eq!(streamed.finish_reasons, ["repetition"]);
    assert_eq!(streamed.text, caught_text);

    // min_tokens holds detection back, as it holds EOS back.
    let held = with(
        looping_prompt(),
        json!({"repetition_detection": {"max_pattern_size": 8, "min_count": 3},
               "min_tokens": MAX_TOKENS}),
    );
    assert_eq!(finish_reason(&api.json(COMPLETIONS, &held).await), "length");

    let metrics = api
        .send(api.client.get(api.server.url("/metrics")))
        .await
        .text()
        .await
        .expect("metrics");
    let repetitions = metrics
        .lines()
        .find(|line| {
            line.starts_with("pagoda:request_success_total")
                && line.contains("finished_reason=\"repetition\"")
        })
        .unwrap_or_else(|| panic!("a repetition series:\n{metrics}"));
    let count: f64 = repetitions
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a value");
    assert_eq!(count, 2.0, "{repetitions}");
}
