use crate::openai::wire::usage::{PromptTokensDetails, Usage};
use serde::Serialize;
use serde_json::{json, Value};

use super::*;
use crate::openai::responses::chat_json;
use crate::openai::responses::request::ResponsesRequest;

/// A translator whose events and Response objects come as the JSON they are written as (what
/// the assertions read).
struct Written(ResponseEvents);

fn json_of(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("serializes")
}

fn all_json(events: Vec<ResponseStreamEvent>) -> Vec<Value> {
    events.iter().map(json_of).collect()
}

impl Written {
    fn opening(&mut self) -> Vec<Value> {
        all_json(self.0.opening())
    }

    /// A delta and its log-probabilities, as chat's streamed choice writes them.
    fn on_delta(&mut self, delta: &Value, logprobs: &[Value]) -> Vec<Value> {
        let logprobs: Vec<_> = logprobs.iter().map(chat_json::logprob).collect();
        all_json(self.0.on_delta(&chat_json::delta(delta), &logprobs))
    }

    fn finish(&mut self, finish_reason: &str, chat_usage: &Usage) -> (Vec<Value>, Value) {
        let (events, response) = self.0.finish(finish_reason, chat_usage);
        (all_json(events), json_of(&response))
    }

    fn fail(&mut self, code: &str, message: &str) -> (Vec<Value>, Value) {
        let (events, response) = self.0.fail(code, message);
        (all_json(events), json_of(&response))
    }

    fn cancel(&mut self, chat_usage: &Usage) -> (Vec<Value>, Value) {
        let (events, response) = self.0.cancel(chat_usage);
        (all_json(events), json_of(&response))
    }
}

fn events() -> Written {
    let request: ResponsesRequest = serde_json::from_value(json!({"input": "x"})).expect("request");
    Written(ResponseEvents::new(ResponseShell::new(
        "resp_t".into(),
        1,
        "m".into(),
        &request,
    )))
}

fn usage() -> Usage {
    Usage {
        prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: 2 }),
        ..Usage::new(5, 3)
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn a_text_answer_is_one_message_item_between_created_and_completed() {
    let mut stream = events();
    let mut all = stream.opening();
    all.extend(stream.on_delta(&json!({"content": "Hel"}), &[]));
    all.extend(stream.on_delta(&json!({"content": ""}), &[]));
    all.extend(stream.on_delta(&json!({"content": "lo"}), &[]));
    let (last, response) = stream.finish("stop", &usage());
    all.extend(last);
    assert_eq!(
        kinds(&all),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let numbers: Vec<u64> = all
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect();
    assert_eq!(numbers, (0..all.len() as u64).collect::<Vec<_>>());
    assert_eq!(all[6]["text"], "Hello");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["content"][0]["text"], "Hello");
    assert_eq!(response["output"][0]["id"], all[4]["item_id"]);
    assert_eq!(response["usage"]["input_tokens"], 5);
    assert_eq!(
        response["usage"]["input_tokens_details"]["cached_tokens"],
        2
    );
    assert_eq!(response["usage"]["output_tokens"], 3);
    assert_eq!(all.last().expect("completed")["response"], response);
}

#[test]
fn reasoning_text_and_calls_are_items_in_the_order_written() {
    let mut stream = events();
    let mut all = stream.on_delta(&json!({"reasoning_content": "think"}), &[]);
    all.extend(stream.on_delta(&json!({"content": "Sure."}), &[]));
    let opening = json!({"index": 0, "id": "call_a", "type": "function",
        "function": {"name": "w", "arguments": "{\"ci"}});
    all.extend(stream.on_delta(&json!({"tool_calls": [opening]}), &[]));
    let more = json!({"index": 0, "function": {"arguments": "ty\": 1}"}});
    all.extend(stream.on_delta(&json!({"tool_calls": [more]}), &[]));
    let second = json!({"index": 1, "id": "call_b", "type": "function",
        "function": {"name": "v", "arguments": "{}"}});
    all.extend(stream.on_delta(&json!({"tool_calls": [second]}), &[]));
    let (last, response) = stream.finish("tool_calls", &usage());
    all.extend(last);
    let output = response["output"].as_array().expect("output");
    let types: Vec<&str> = output
        .iter()
        .map(|i| i["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        ["reasoning", "message", "function_call", "function_call"]
    );
    assert_eq!(output[0]["content"][0]["text"], "think");
    assert_eq!(output[2]["call_id"], "call_a");
    assert_eq!(output[2]["arguments"], "{\"city\": 1}");
    assert_eq!(output[3]["name"], "v");
    let added = kinds(&all)
        .iter()
        .filter(|k| **k == "response.output_item.added")
        .count();
    let done: Vec<&Value> = all
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .collect();
    assert_eq!((added, done.len()), (4, 4));
    for (index, event) in done.iter().enumerate() {
        assert_eq!(event["output_index"], index);
        assert_eq!(event["item"], output[index]);
    }
    let arguments: String = all
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta" && e["output_index"] == 2)
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(arguments, "{\"city\": 1}");
    assert_eq!(response["status"], "completed");
}

#[test]
fn a_length_finish_is_incomplete_and_a_failure_says_why() {
    let mut stream = events();
    stream.on_delta(&json!({"content": "cut"}), &[]);
    let (last, response) = stream.finish("length", &usage());
    assert_eq!(kinds(&last).last(), Some(&"response.incomplete"));
    assert_eq!(response["status"], "incomplete");
    assert_eq!(
        response["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(response["output"][0]["status"], "incomplete");
    let mut failing = events();
    failing.on_delta(&json!({"content": "half"}), &[]);
    let (failed, failed_response) = failing.fail("server_error", "boom");
    let failed_kinds = kinds(&failed);
    assert_eq!(failed_kinds.last(), Some(&"response.failed"));
    assert!(
        failed_kinds.contains(&"response.output_item.done"),
        "the open item is closed"
    );
    let response = &failed.last().expect("failed")["response"];
    assert_eq!(response, &failed_response);
    assert_eq!(response["status"], "failed");
    assert_eq!(response["error"]["message"], "boom");
    assert_eq!(response["output"][0]["status"], "incomplete");
    // A call the token limit cut short is incomplete too.
    let mut cut = events();
    let call = json!({"index": 0, "id": "call_a", "type": "function",
        "function": {"name": "w", "arguments": "{\"ci"}});
    cut.on_delta(&json!({"tool_calls": [call]}), &[]);
    let (_, response) = cut.finish("length", &usage());
    assert_eq!(response["output"][0]["type"], "function_call");
    assert_eq!(response["output"][0]["status"], "incomplete");
}

#[test]
fn a_cancelled_response_keeps_what_was_written_and_closes_the_open_item() {
    let mut stream = events();
    stream.on_delta(&json!({"reasoning_content": "think"}), &[]);
    stream.on_delta(&json!({"content": "partial"}), &[]);
    let (last, response) = stream.cancel(&usage());
    assert_eq!(
        kinds(&last),
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.cancelled"
        ]
    );
    assert_eq!(last[3]["response"], response);
    assert_eq!(response["status"], "cancelled");
    assert_eq!(
        response["output"][0]["status"], "completed",
        "the reasoning ended"
    );
    assert_eq!(response["output"][1]["status"], "incomplete");
    assert_eq!(response["output"][1]["content"][0]["text"], "partial");
    assert_eq!(response["usage"]["output_tokens"], 3);
    // Nothing open: only the last event, and the response is still cancelled.
    let (only, response) = events().cancel(&usage());
    assert_eq!(kinds(&only), ["response.cancelled"]);
    assert_eq!(response["status"], "cancelled");
}

#[test]
fn whitespace_before_calls_is_no_message_but_leads_an_answer() {
    let mut stream = events();
    stream.on_delta(&json!({"reasoning_content": "hmm"}), &[]);
    assert!(stream.on_delta(&json!({"content": "\n\n"}), &[]).is_empty());
    let call = json!({"index": 0, "id": "call_a", "type": "function",
        "function": {"name": "w", "arguments": "{}"}});
    stream.on_delta(&json!({"tool_calls": [call]}), &[]);
    let (_, response) = stream.finish("tool_calls", &usage());
    let types: Vec<&str> = response["output"]
        .as_array()
        .expect("output")
        .iter()
        .map(|i| i["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types, ["reasoning", "function_call"]);
    let mut answer = events();
    answer.on_delta(&json!({"content": "\n"}), &[]);
    answer.on_delta(&json!({"content": "Hi"}), &[]);
    let (_, response) = answer.finish("stop", &usage());
    assert_eq!(response["output"][0]["content"][0]["text"], "\nHi");
    let mut blank = events();
    blank.on_delta(&json!({"content": " "}), &[]);
    let (_, response) = blank.finish("stop", &usage());
    assert_eq!(response["output"][0]["content"][0]["text"], " ");
}

#[test]
fn held_tokens_logprobs_come_with_the_next_text() {
    let mut stream = events();
    let held = [json!({"token": "a", "logprob": -1.0})];
    let shown = [json!({"token": "b", "logprob": -2.0})];
    assert!(stream.on_delta(&json!({"content": ""}), &held).is_empty());
    let all = stream.on_delta(&json!({"content": "ab"}), &shown);
    let delta = all.last().expect("a delta");
    let both = json_of(&[chat_json::logprob(&held[0]), chat_json::logprob(&shown[0])]);
    assert_eq!(delta["logprobs"], both);
    let (_, response) = stream.finish("stop", &usage());
    assert_eq!(response["output"][0]["content"][0]["logprobs"], both);
}

#[test]
fn a_streamed_call_writes_exactly_these_events() {
    let mut stream = events();
    let call = json!({"index": 0, "id": "call_a", "type": "function",
        "function": {"name": "w", "arguments": "{\"a"}});
    let mut all = stream.on_delta(&json!({"tool_calls": [call]}), &[]);
    let (last, _) = stream.finish("length", &usage());
    all.extend(last);
    let written: Vec<String> = all.iter().take(4).map(Value::to_string).collect();
    assert_eq!(
        written,
        [
            concat!(
                r#"{"output_index":0,"item":{"type":"function_call","id":"fc_t_0","#,
                r#""call_id":"call_a","name":"w","arguments":"","status":"in_progress"},"#,
                r#""type":"response.output_item.added","sequence_number":0}"#
            ),
            concat!(
                r#"{"item_id":"fc_t_0","output_index":0,"delta":"{\"a","#,
                r#""type":"response.function_call_arguments.delta","sequence_number":1}"#
            ),
            concat!(
                r#"{"item_id":"fc_t_0","output_index":0,"arguments":"{\"a","name":"w","#,
                r#""type":"response.function_call_arguments.done","sequence_number":2}"#
            ),
            concat!(
                r#"{"output_index":0,"item":{"type":"function_call","id":"fc_t_0","#,
                r#""call_id":"call_a","name":"w","arguments":"{\"a","status":"incomplete"},"#,
                r#""type":"response.output_item.done","sequence_number":3}"#
            ),
        ]
    );
    assert_eq!(kinds(&all[4..]), ["response.incomplete"]);
}
