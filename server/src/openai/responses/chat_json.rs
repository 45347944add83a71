//! Tests' shorthand: chat's answer shapes (a whole choice, a streamed delta, a token's
//! log-probability) read from the JSON chat's clients see, so that the Responses tests state
//! their cases as chat writes them. Only the fields the Responses API reads are read.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::openai::wire::chat::{ChatChoice, ChatChunkDelta, ChatMessage};
use crate::openai::wire::logprobs::{ChatLogprobs, ChatTokenLogprob};
use crate::openai::wire::tool_calls::{ArgumentsDelta, FunctionCall, ToolCall, ToolCallDelta};

fn text(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(String::from)
}

fn function(call: &Value) -> FunctionCall {
    FunctionCall {
        name: text(call, "/function/name").unwrap_or_default(),
        arguments: text(call, "/function/arguments").unwrap_or_default(),
    }
}

/// `{"token", "logprob"}` (its bytes are the token's; no alternatives).
pub fn logprob(value: &Value) -> ChatTokenLogprob {
    let token = text(value, "/token").unwrap();
    ChatTokenLogprob {
        bytes: token.as_bytes().to_vec(),
        token,
        logprob: value["logprob"].as_f64().unwrap() as f32,
        top_logprobs: Vec::new(),
    }
}

/// A streamed delta: `content`, `reasoning_content`, `tool_calls` (an opening when it has an
/// `id`, more arguments otherwise).
pub fn delta(value: &Value) -> ChatChunkDelta {
    let call = |(index, call): (usize, &Value)| match text(call, "/id") {
        Some(id) => ToolCallDelta::Opening {
            id,
            kind: "function",
            function: function(call),
            index,
        },
        None => ToolCallDelta::Arguments {
            index,
            function: ArgumentsDelta {
                arguments: text(call, "/function/arguments").unwrap_or_default(),
            },
        },
    };
    let calls = value["tool_calls"].as_array();
    ChatChunkDelta {
        reasoning_content: text(value, "/reasoning_content"),
        content: text(value, "/content"),
        tool_calls: calls.map(|calls| calls.iter().enumerate().map(call).collect()),
        ..ChatChunkDelta::default()
    }
}

/// A whole choice: `finish_reason` (`stop` when left out), the message's `content`,
/// `reasoning_content` and `tool_calls`, and `logprobs.content`.
pub fn choice(value: &Value) -> ChatChoice {
    let message = &value["message"];
    let call = |call: &Value| ToolCall {
        id: text(call, "/id").unwrap_or_default(),
        kind: "function",
        function: function(call),
    };
    let logprobs = value.pointer("/logprobs/content").and_then(Value::as_array);
    ChatChoice {
        index: 0,
        message: ChatMessage {
            role: "assistant".into(),
            content: text(message, "/content"),
            tool_calls: message["tool_calls"]
                .as_array()
                .map(|c| c.iter().map(call).collect()),
            reasoning_content: Some(text(message, "/reasoning_content")),
            function_call: None,
        },
        logprobs: logprobs.map(|content| ChatLogprobs {
            content: content.iter().map(logprob).collect(),
        }),
        finish_reason: text(value, "/finish_reason").unwrap_or_else(|| "stop".into()),
        stop_reason: None,
        token_ids: None,
    }
}
