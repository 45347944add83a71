//! A streamed response's events, from a chat choice's streamed deltas: `response.created`, then
//! per output item `response.output_item.added`, its deltas (`response.reasoning_text.delta`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`), their `.done`
//! events and `response.output_item.done`, and last `response.completed` (or `incomplete`).
//! Every event carries its `sequence_number`.

use crate::openai::wire::responses_usage::ResponsesUsage;
use crate::openai::wire::usage::Usage;
use serde_json::{json, Value};

use crate::openai::responses::object::{
    function_call_item, message_item, reasoning_item, status_of, text_part, ResponseShell,
};

/// The output item being written.
#[derive(Debug, Clone, PartialEq)]
enum OpenItem {
    Reasoning { text: String },
    Message { text: String, logprobs: Vec<Value> },
    Call { call: Value, arguments: String },
}

/// Turns one choice's chat deltas into Responses events, keeping the output for the end.
#[derive(Debug, Clone)]
pub struct ResponseEvents {
    shell: ResponseShell,
    sequence_number: u64,
    output: Vec<Value>,
    open: Option<OpenItem>,
    /// Log-probabilities of tokens whose text is still held back (a possible stop string).
    pending_logprobs: Vec<Value>,
    /// Whitespace not yet in a message: before calls it is none (as in the whole response).
    pending_text: String,
}

impl ResponseEvents {
    pub fn new(shell: ResponseShell) -> Self {
        Self {
            shell,
            sequence_number: 0,
            output: Vec::new(),
            open: None,
            pending_logprobs: Vec::new(),
            pending_text: String::new(),
        }
    }

    /// `response.created` and `response.in_progress`.
    pub fn opening(&mut self) -> Vec<Value> {
        let response = self.shell.object("in_progress", Vec::new(), None);
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    /// The events of one streamed chat delta (`reasoning_content`, `content`, `tool_calls`) and
    /// its log-probabilities (chat's `logprobs.content`).
    pub fn on_delta(&mut self, delta: &Value, logprobs: &[Value]) -> Vec<Value> {
        let mut events = Vec::new();
        if let Some(text) = delta["reasoning_content"]
            .as_str()
            .filter(|t| !t.is_empty())
        {
            if !matches!(self.open, Some(OpenItem::Reasoning { .. })) {
                events.extend(self.open_item(OpenItem::Reasoning {
                    text: String::new(),
                }));
            }
            events.push(self.text_delta("response.reasoning_text.delta", text, &[]));
        }
        self.pending_logprobs.extend(logprobs.iter().cloned());
        let text = delta["content"].as_str().unwrap_or("");
        let is_open = matches!(self.open, Some(OpenItem::Message { .. }));
        if !is_open && !text.is_empty() && text.trim().is_empty() {
            self.pending_text.push_str(text);
        } else if !text.is_empty() {
            events.extend(self.message_text(text));
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            self.pending_text.clear();
            events.extend(self.on_call_delta(call));
        }
        events
    }

    /// Text of the message (opened first when another item, or none, is open), after the
    /// whitespace held before it.
    fn message_text(&mut self, text: &str) -> Vec<Value> {
        let mut events = Vec::new();
        if !matches!(self.open, Some(OpenItem::Message { .. })) {
            let message = OpenItem::Message {
                text: String::new(),
                logprobs: Vec::new(),
            };
            events.extend(self.open_item(message));
        }
        let text = std::mem::take(&mut self.pending_text) + text;
        let logprobs = std::mem::take(&mut self.pending_logprobs);
        events.push(self.text_delta("response.output_text.delta", &text, &logprobs));
        events
    }

    /// The last events: the open item closed and `response.completed` (`response.incomplete`
    /// when the output hit `max_output_tokens`); also the final Response object.
    pub fn finish(&mut self, finish_reason: &str, chat_usage: &Usage) -> (Vec<Value>, Value) {
        let status = status_of(finish_reason);
        let has_calls = self
            .output
            .iter()
            .any(|item| item["type"] == "function_call")
            || matches!(self.open, Some(OpenItem::Call { .. }));
        let mut events = match self.pending_text.is_empty() || has_calls {
            true => Vec::new(),
            // An answer of whitespace alone is still the answer.
            false => self.message_text(""),
        };
        events.extend(self.close_item(status));
        let usage = ResponsesUsage::from(chat_usage);
        let response = self.shell.object(status, self.output.clone(), Some(usage));
        let kind = match status {
            "incomplete" => "response.incomplete",
            _ => "response.completed",
        };
        events.push(self.event(kind, json!({"response": response})));
        (events, response)
    }

    /// The open item closed as incomplete, then `response.failed` with the error; also the
    /// failed Response object.
    pub fn fail(&mut self, code: &str, message: &str) -> (Vec<Value>, Value) {
        let mut events = self.close_item("incomplete");
        let mut response = self.shell.object("failed", self.output.clone(), None);
        response["error"] = json!({"code": code, "message": message});
        events.push(self.event("response.failed", json!({"response": response})));
        (events, response)
    }

    /// A cancelled background response: the open item closed as incomplete (its `.done`
    /// events), then `response.cancelled` with the Response object, status `cancelled`, the
    /// output written so far and the usage so far (the Responses API names no event for a
    /// cancellation; a follower of the stream needs a last one to tell it from a lost
    /// connection).
    pub fn cancel(&mut self, chat_usage: &Usage) -> (Vec<Value>, Value) {
        let mut events = self.close_item("incomplete");
        let usage = ResponsesUsage::from(chat_usage);
        let response = self
            .shell
            .object("cancelled", self.output.clone(), Some(usage));
        events.push(self.event("response.cancelled", json!({"response": response})));
        (events, response)
    }

    fn event(&mut self, kind: &str, mut fields: Value) -> Value {
        fields["type"] = Value::from(kind);
        fields["sequence_number"] = Value::from(self.sequence_number);
        self.sequence_number += 1;
        fields
    }

    fn open_index(&self) -> (String, usize) {
        let index = self.output.len();
        let prefix = match self.open {
            Some(OpenItem::Reasoning { .. }) => "rs",
            Some(OpenItem::Call { .. }) => "fc",
            _ => "msg",
        };
        (self.shell.item_id(prefix, index), index)
    }

    fn text_delta(&mut self, kind: &str, text: &str, logprobs: &[Value]) -> Value {
        match &mut self.open {
            Some(OpenItem::Reasoning { text: all }) => all.push_str(text),
            Some(OpenItem::Message {
                text: all,
                logprobs: kept,
            }) => {
                all.push_str(text);
                kept.extend(logprobs.iter().cloned());
            }
            _ => {}
        }
        let (item_id, output_index) = self.open_index();
        let mut fields = json!({"item_id": item_id, "output_index": output_index,
            "content_index": 0, "delta": text});
        if kind == "response.output_text.delta" {
            fields["logprobs"] = json!(logprobs);
        }
        self.event(kind, fields)
    }

    fn on_call_delta(&mut self, call: &Value) -> Vec<Value> {
        let mut events = Vec::new();
        if call.get("id").is_some_and(|id| !id.is_null()) {
            let arguments = call.pointer("/function/arguments").and_then(Value::as_str);
            let opened = OpenItem::Call {
                call: call.clone(),
                arguments: String::new(),
            };
            events.extend(self.open_item(opened));
            if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
                events.push(self.arguments_delta(arguments));
            }
        } else if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str)
        {
            events.push(self.arguments_delta(arguments));
        }
        events
    }

    fn arguments_delta(&mut self, delta: &str) -> Value {
        if let Some(OpenItem::Call { arguments, .. }) = &mut self.open {
            arguments.push_str(delta);
        }
        let (item_id, output_index) = self.open_index();
        self.event(
            "response.function_call_arguments.delta",
            json!({"item_id": item_id, "output_index": output_index, "delta": delta}),
        )
    }

    /// Closes the open item (as completed) and opens `item`.
    fn open_item(&mut self, item: OpenItem) -> Vec<Value> {
        let mut events = self.close_item("completed");
        self.open = Some(item);
        let (id, output_index) = self.open_index();
        let (added, part) = match &self.open {
            Some(OpenItem::Reasoning { .. }) => {
                (reasoning_item(id.clone(), "", "in_progress"), None)
            }
            Some(OpenItem::Call { call, .. }) => {
                let mut empty = call.clone();
                empty["function"]["arguments"] = json!("");
                (function_call_item(id.clone(), &empty, "in_progress"), None)
            }
            _ => (
                message_item(id.clone(), Vec::new(), "in_progress"),
                Some(text_part("", &[])),
            ),
        };
        let item_added = json!({"output_index": output_index, "item": added});
        events.push(self.event("response.output_item.added", item_added));
        if let Some(part) = part {
            let fields = json!({"item_id": id, "output_index": output_index, "content_index": 0,
                "part": part});
            events.push(self.event("response.content_part.added", fields));
        }
        events
    }

    /// The open item's `.done` events with `status` (`incomplete` when the token limit or an
    /// error cut it short), the item kept in the output.
    fn close_item(&mut self, status: &str) -> Vec<Value> {
        let Some(item) = self.open.take() else {
            return Vec::new();
        };
        let output_index = self.output.len();
        let mut events = Vec::new();
        let done = match item {
            OpenItem::Reasoning { text } => {
                let id = self.shell.item_id("rs", output_index);
                let fields = json!({"item_id": id, "output_index": output_index,
                    "content_index": 0, "text": text});
                events.push(self.event("response.reasoning_text.done", fields));
                reasoning_item(id, &text, status)
            }
            OpenItem::Message { text, logprobs } => {
                let id = self.shell.item_id("msg", output_index);
                let part = text_part(&text, &logprobs);
                let fields = json!({"item_id": id, "output_index": output_index,
                    "content_index": 0, "text": text, "logprobs": logprobs});
                events.push(self.event("response.output_text.done", fields));
                let fields = json!({"item_id": id, "output_index": output_index,
                    "content_index": 0, "part": part});
                events.push(self.event("response.content_part.done", fields));
                message_item(id, vec![part], status)
            }
            OpenItem::Call {
                mut call,
                arguments,
            } => {
                let id = self.shell.item_id("fc", output_index);
                call["function"]["arguments"] = Value::from(arguments.clone());
                let fields = json!({"item_id": id, "output_index": output_index,
                    "arguments": arguments, "name": call["function"]["name"]});
                events.push(self.event("response.function_call_arguments.done", fields));
                function_call_item(id, &call, status)
            }
        };
        let fields = json!({"output_index": output_index, "item": done});
        events.push(self.event("response.output_item.done", fields));
        self.output.push(done);
        events
    }
}

#[cfg(test)]
mod tests;
