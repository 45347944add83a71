//! The Response object: the request's settings as OpenAI echoes them, the output items (reasoning,
//! a message, function calls) read from a chat answer, and usage in Responses' names.

use serde_json::{json, Map, Value};

use crate::openai::responses::request::ResponsesRequest;
use crate::openai::wire::responses_usage::ResponsesUsage;

/// What every state of one response shares: its id, time, model and the request's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseShell {
    pub id: String,
    fields: Map<String, Value>,
}

impl ResponseShell {
    pub fn new(id: String, created_at_s: u64, model: String, request: &ResponsesRequest) -> Self {
        let mut fields = Map::new();
        let mut put = |key: &str, value: Value| {
            fields.insert(key.into(), value);
        };
        put("id", Value::from(id.clone()));
        put("object", Value::from("response"));
        put("created_at", Value::from(created_at_s));
        put("model", Value::from(model));
        put("instructions", json!(request.instructions));
        put("max_output_tokens", json!(request.max_output_tokens));
        put(
            "parallel_tool_calls",
            json!(request.parallel_tool_calls.unwrap_or(true)),
        );
        put("temperature", json!(request.temperature));
        put("top_p", json!(request.top_p));
        put(
            "tool_choice",
            request.tool_choice.clone().unwrap_or(json!("auto")),
        );
        put("tools", json!(request.tools.clone().unwrap_or_default()));
        let text = request.text.clone();
        put(
            "text",
            text.unwrap_or_else(|| json!({"format": {"type": "text"}})),
        );
        put(
            "metadata",
            request.metadata.clone().unwrap_or_else(|| json!({})),
        );
        put("previous_response_id", json!(request.previous_response_id));
        put(
            "reasoning",
            request.reasoning.clone().unwrap_or(Value::Null),
        );
        put("store", json!(request.store.unwrap_or(true)));
        put(
            "truncation",
            json!(request.truncation.as_deref().unwrap_or("disabled")),
        );
        put("user", json!(request.user));
        put("top_logprobs", json!(request.top_logprobs.unwrap_or(0)));
        put("background", json!(request.background.unwrap_or(false)));
        Self { id, fields }
    }

    /// The Response in a state: `in_progress`, `completed`, `incomplete` (`finish_reason`
    /// `length`: the output hit `max_output_tokens`) or `failed`.
    pub fn object(&self, status: &str, output: Vec<Value>, usage: Option<ResponsesUsage>) -> Value {
        let mut object = self.fields.clone();
        object.insert("status".into(), Value::from(status));
        let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
        object.insert("incomplete_details".into(), json!(incomplete));
        object.insert("error".into(), Value::Null);
        object.insert("output".into(), Value::Array(output));
        let usage = serde_json::to_value(usage).expect("usage serializes");
        object.insert("usage".into(), usage);
        Value::Object(object)
    }

    /// An output item's id: its kind's prefix, the response's id, its place.
    pub fn item_id(&self, prefix: &str, output_index: usize) -> String {
        let suffix = self.id.strip_prefix("resp_").unwrap_or(&self.id);
        format!("{prefix}_{suffix}_{output_index}")
    }
}

/// The status a chat `finish_reason` gives a response.
pub fn status_of(finish_reason: &str) -> &'static str {
    match finish_reason {
        "length" => "incomplete",
        _ => "completed",
    }
}

pub fn reasoning_item(id: String, text: &str, status: &str) -> Value {
    let content = match text.is_empty() {
        true => json!([]),
        false => json!([{"type": "reasoning_text", "text": text}]),
    };
    json!({"type": "reasoning", "id": id, "summary": [], "content": content, "status": status})
}

pub fn text_part(text: &str, logprobs: &[Value]) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs})
}

pub fn message_item(id: String, content: Vec<Value>, status: &str) -> Value {
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

pub fn function_call_item(id: String, call: &Value, status: &str) -> Value {
    json!({
        "type": "function_call",
        "id": id,
        "call_id": call["id"],
        "name": call.pointer("/function/name").cloned().unwrap_or_default(),
        "arguments": call.pointer("/function/arguments").cloned().unwrap_or(json!("")),
        "status": status,
    })
}

/// The output items of a finished chat choice: its reasoning, its text, its tool calls.
pub fn output_items(shell: &ResponseShell, choice: &Value) -> Vec<Value> {
    let message = &choice["message"];
    let mut output = Vec::new();
    if let Some(reasoning) = message["reasoning_content"]
        .as_str()
        .filter(|r| !r.is_empty())
    {
        output.push(reasoning_item(
            shell.item_id("rs", output.len()),
            reasoning,
            "completed",
        ));
    }
    let calls = message["tool_calls"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    // Whitespace before calls is no message (a reasoning model's blank line after thinking).
    let text = message["content"].as_str().unwrap_or("");
    let is_blank_before_calls = !calls.is_empty() && text.trim().is_empty();
    if !text.is_empty() && !is_blank_before_calls {
        let logprobs = choice
            .pointer("/logprobs/content")
            .and_then(Value::as_array);
        let part = text_part(text, logprobs.map_or(&[][..], Vec::as_slice));
        output.push(message_item(
            shell.item_id("msg", output.len()),
            vec![part],
            "completed",
        ));
    }
    for call in calls {
        let id = shell.item_id("fc", output.len());
        output.push(function_call_item(id, call, "completed"));
    }
    // The item the token limit cut short is incomplete, as OpenAI marks it.
    let status = status_of(choice["finish_reason"].as_str().unwrap_or("stop"));
    if let Some(last) = output.last_mut().filter(|_| status == "incomplete") {
        last["status"] = Value::from(status);
    }
    output
}

/// The assistant's chat message an output stands for (what a later `previous_response_id`
/// continues from; reasoning is left out, as chat templates leave it out).
pub fn assistant_message(output: &[Value]) -> Value {
    let texts: Vec<&str> = output
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter_map(|part| part["text"].as_str())
        .collect();
    let calls: Vec<Value> = output
        .iter()
        .filter(|item| item["type"] == "function_call")
        .map(|item| {
            json!({"id": item["call_id"], "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]}})
        })
        .collect();
    let content = match texts.is_empty() {
        true => Value::Null,
        false => Value::from(texts.join("")),
    };
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell() -> ResponseShell {
        let request: ResponsesRequest =
            serde_json::from_value(json!({"input": "x"})).expect("request");
        ResponseShell::new("resp_t".into(), 1, "m".into(), &request)
    }

    #[test]
    fn blank_text_before_calls_is_no_item_and_a_cut_item_is_incomplete() {
        let call = json!({"id": "call_a", "type": "function",
            "function": {"name": "w", "arguments": "{\"city\": \"Par"}});
        let choice = json!({"finish_reason": "length", "message": {"role": "assistant",
            "content": "\n\n", "reasoning_content": "hmm", "tool_calls": [call]}});
        let output = output_items(&shell(), &choice);
        let types: Vec<&str> = output
            .iter()
            .map(|i| i["type"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(types, ["reasoning", "function_call"]);
        assert_eq!(output[0]["status"], "completed");
        assert_eq!(output[1]["status"], "incomplete");
        assert_eq!(output[1]["call_id"], "call_a");
        let answer = json!({"finish_reason": "stop", "message": {"content": "\n"}});
        assert_eq!(
            output_items(&shell(), &answer)[0]["content"][0]["text"],
            "\n"
        );
    }
}
