//! OpenAI's deprecated chat fields `functions` and `function_call`, which OpenAI still serves and
//! older clients and frameworks still send: read as `tools` and `tool_choice` (one call at a
//! time), and answered in their own shape — `message.function_call` and `finish_reason:
//! "function_call"`, streamed as `delta.function_call` — with a conversation's assistant
//! `function_call` messages and `function` results read as tool calls and tool results.

use serde_json::Value;

use pagoda_text::template::{AssistantToolCall, ChatMessage};

use crate::openai::error::ApiError;
use crate::openai::request::body::ChatCompletionRequest;
use crate::openai::tools::request::{chat_function_tool, chat_named_tool_choice};
use crate::openai::wire::chat::{ChatChoice, ChatChunkChoice};
use crate::openai::wire::tool_calls::{ToolCall, ToolCallDelta};

/// Rewrites a request that offers `functions` into its `tools` form; `true` when it did (the
/// answer then takes the legacy shape, see [`legacy_choice`]).
pub fn read_legacy_functions(request: &mut ChatCompletionRequest) -> Result<bool, ApiError> {
    let functions = match request.options.functions.take() {
        None | Some(Value::Null) => {
            return match request.options.function_call.as_ref() {
                None | Some(Value::Null) => Ok(false),
                Some(_) => Err(ApiError::invalid(
                    "function_call",
                    "`function_call` needs `functions` (or use `tools` and `tool_choice`)",
                )),
            };
        }
        Some(Value::Array(functions)) if !functions.is_empty() => functions,
        Some(_) => {
            return Err(ApiError::invalid(
                "functions",
                "`functions` must be a non-empty list of function definitions",
            ))
        }
    };
    if request.options.tools.as_ref().is_some_and(|t| !t.is_null()) {
        return Err(ApiError::invalid(
            "functions",
            "give `tools` or the deprecated `functions`, not both",
        ));
    }
    if request
        .options
        .tool_choice
        .as_ref()
        .is_some_and(|t| !t.is_null())
    {
        return Err(ApiError::invalid(
            "tool_choice",
            "with the deprecated `functions`, choose with `function_call`",
        ));
    }
    let tools = functions
        .into_iter()
        .enumerate()
        .map(|(index, function)| match function {
            Value::Object(function) => Ok(chat_function_tool(function)),
            _ => Err(ApiError::invalid(
                format!("functions[{index}]"),
                "a function definition must be an object",
            )),
        })
        .collect::<Result<_, _>>()?;
    request.options.tools = Some(Value::Array(tools));
    request.options.tool_choice = tool_choice_of(request.options.function_call.take())?;
    // A legacy answer carries one call.
    request.options.parallel_tool_calls = Some(false);
    read_legacy_messages(&mut request.messages);
    Ok(true)
}

/// `function_call` as `tool_choice`: `"none"`, `"auto"`, or `{"name": …}` for that function.
fn tool_choice_of(function_call: Option<Value>) -> Result<Option<Value>, ApiError> {
    match function_call {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(mode)) if mode == "none" || mode == "auto" => {
            Ok(Some(Value::String(mode)))
        }
        Some(Value::Object(named)) if named.get("name").is_some_and(Value::is_string) => {
            let name = named["name"].as_str().unwrap_or_default();
            Ok(Some(chat_named_tool_choice(name)))
        }
        Some(_) => Err(ApiError::invalid(
            "function_call",
            "`function_call` must be \"none\", \"auto\" or {\"name\": \"…\"}",
        )),
    }
}

/// An assistant message's `function_call` becomes its one tool call; a `function` message
/// becomes the `tool` result of the call before it (or, with no call before it, of a call id of
/// its own: a `tool` message always answers one).
fn read_legacy_messages(messages: &mut [ChatMessage]) {
    let mut last_call_id: Option<String> = None;
    for (index, message) in messages.iter_mut().enumerate() {
        if let Some(function) = message.function_call.take() {
            if message.tool_calls.is_none() {
                let id = format!("call_{index}");
                message.tool_calls = Some(vec![AssistantToolCall {
                    id: id.clone(),
                    kind: "function".to_string(),
                    function,
                }]);
                last_call_id = Some(id);
            }
        } else if message.role == "function" {
            message.role = "tool".to_string();
            if message.tool_call_id.is_none() {
                let own_id = || format!("call_{index}");
                message.tool_call_id = Some(last_call_id.clone().unwrap_or_else(own_id));
            }
        }
    }
}

/// The finish reason in the legacy shape: `function_call` for `tool_calls`.
fn legacy_finish_reason(reason: String) -> String {
    match reason.as_str() {
        "tool_calls" => "function_call".to_string(),
        _ => reason,
    }
}

/// A whole chat choice in the legacy shape: the first tool call as `function_call` and
/// `finish_reason: "function_call"` for `"tool_calls"`.
pub fn legacy_choice(choice: ChatChoice) -> ChatChoice {
    let mut message = choice.message;
    if let Some(calls) = message.tool_calls.take() {
        message.function_call = calls.first().map(ToolCall::legacy);
    }
    ChatChoice {
        message,
        finish_reason: legacy_finish_reason(choice.finish_reason),
        ..choice
    }
}

/// A streamed chat choice in the legacy shape: the first call's piece as `function_call`
/// (`name` and `arguments`, as far as the delta has them).
pub fn legacy_chunk_choice(choice: ChatChunkChoice) -> ChatChunkChoice {
    let mut delta = choice.delta;
    if let Some(pieces) = delta.tool_calls.take() {
        delta.function_call = pieces.first().map(ToolCallDelta::legacy);
    }
    ChatChunkChoice {
        delta,
        finish_reason: choice.finish_reason.map(legacy_finish_reason),
        ..choice
    }
}

#[cfg(test)]
#[path = "legacy_functions_tests.rs"]
mod tests;
