//! OpenAI's deprecated chat fields `functions` and `function_call`, which OpenAI still serves and
//! older clients and frameworks still send: read as `tools` and `tool_choice` (one call at a
//! time), and answered in their own shape — `message.function_call` and `finish_reason:
//! "function_call"`, streamed as `delta.function_call` — with a conversation's assistant
//! `function_call` messages and `function` results read as tool calls and tool results.

use serde_json::{json, Map, Value};

use pagoda_text::template::{AssistantToolCall, ChatMessage};

use crate::openai::error::ApiError;
use crate::openai::request::body::ChatCompletionRequest;

/// Rewrites a request that offers `functions` into its `tools` form; `true` when it did (the
/// answer then takes the legacy shape, see [`to_legacy_choice`]).
pub fn read_legacy_functions(request: &mut ChatCompletionRequest) -> Result<bool, ApiError> {
    let functions = match request.functions.take() {
        None | Some(Value::Null) => {
            return match request.function_call.as_ref() {
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
    if request.tools.as_ref().is_some_and(|t| !t.is_null()) {
        return Err(ApiError::invalid(
            "functions",
            "give `tools` or the deprecated `functions`, not both",
        ));
    }
    if request.tool_choice.as_ref().is_some_and(|t| !t.is_null()) {
        return Err(ApiError::invalid(
            "tool_choice",
            "with the deprecated `functions`, choose with `function_call`",
        ));
    }
    let tools = functions
        .into_iter()
        .map(|function| json!({"type": "function", "function": function}))
        .collect();
    request.tools = Some(Value::Array(tools));
    request.tool_choice = tool_choice_of(request.function_call.take())?;
    // A legacy answer carries one call.
    request.parallel_tool_calls = Some(false);
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
        Some(Value::Object(named)) if named.get("name").is_some_and(Value::is_string) => Ok(Some(
            json!({"type": "function", "function": {"name": named["name"]}}),
        )),
        Some(_) => Err(ApiError::invalid(
            "function_call",
            "`function_call` must be \"none\", \"auto\" or {\"name\": \"…\"}",
        )),
    }
}

/// An assistant message's `function_call` becomes its one tool call; a `function` message
/// becomes the `tool` result of the call before it.
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
                message.tool_call_id = last_call_id.clone();
            }
        }
    }
}

/// A chat choice (its `message`, or a streamed `delta`) in the legacy shape: the first tool call
/// as `function_call` (`name` and `arguments`, as far as the delta has them) and
/// `finish_reason: "function_call"` for `"tool_calls"`.
pub fn to_legacy_choice(choice: &mut Value) {
    if choice["finish_reason"] == "tool_calls" {
        choice["finish_reason"] = Value::from("function_call");
    }
    for key in ["message", "delta"] {
        let Some(body) = choice.get_mut(key).and_then(Value::as_object_mut) else {
            continue;
        };
        let Some(calls) = body.remove("tool_calls") else {
            continue;
        };
        let Some(function) = calls.get(0).map(|call| &call["function"]) else {
            continue;
        };
        let mut call = Map::new();
        for field in ["name", "arguments"] {
            if let Some(value) = function.get(field) {
                call.insert(field.to_string(), value.clone());
            }
        }
        body.insert("function_call".to_string(), Value::Object(call));
    }
}

#[cfg(test)]
#[path = "legacy_functions_tests.rs"]
mod tests;
