//! A Responses request's `input` as the chat messages it stands for: a string is one user
//! message; `message` items keep their role and text, consecutive `function_call` items become
//! one assistant turn's calls, `function_call_output` items tool results, and `reasoning` items
//! are dropped (chat templates drop reasoning too).

use pagoda_text::template::{AssistantToolCall, ChatMessage};
use serde_json::Value;

use crate::openai::error::ApiError;

/// `input`: a string (one user message) or a list of items.
pub fn input_messages(input: &Value) -> Result<Vec<ChatMessage>, ApiError> {
    let items = match input {
        Value::String(text) => return Ok(vec![ChatMessage::new("user", text.clone())]),
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) => return Err(ApiError::invalid("input", "`input` must not be empty")),
        _ => {
            return Err(ApiError::invalid(
                "input",
                "`input` must be a string or a list of items",
            ))
        }
    };
    let mut messages: Vec<ChatMessage> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = format!("input[{index}]");
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => messages.push(message_of(item, &field)?),
            "function_call" => push_call(&mut messages, function_call_of(item, &field)?),
            "function_call_output" => messages.push(ChatMessage::tool_result(
                string_field(item, "call_id", &field)?,
                output_text(item.get("output"), &field)?,
            )),
            // A model's reasoning is not part of the next prompt (chat templates drop it too).
            "reasoning" => {}
            other => {
                return Err(ApiError::unsupported(
                    &format!("{field}.type"),
                    &format!("input items of type {other:?}"),
                ))
            }
        }
    }
    if messages.is_empty() {
        return Err(ApiError::invalid(
            "input",
            "`input` holds no message to answer (`reasoning` items alone are dropped)",
        ));
    }
    Ok(messages)
}

fn string_field<'a>(item: &'a Value, name: &str, field: &str) -> Result<&'a str, ApiError> {
    item.get(name).and_then(Value::as_str).ok_or_else(|| {
        ApiError::invalid(
            format!("{field}.{name}"),
            format!("`{field}.{name}` must be a string"),
        )
    })
}

/// A message item: `role` and `content` as text or a list of text parts.
fn message_of(item: &Value, field: &str) -> Result<ChatMessage, ApiError> {
    let role = string_field(item, "role", field)?;
    if !["user", "assistant", "system", "developer"].contains(&role) {
        return Err(ApiError::invalid(
            format!("{field}.role"),
            format!(
                "`{field}.role` must be user, assistant, system or developer, got {role:?} (a \
                 tool's result is a `function_call_output` item)"
            ),
        ));
    }
    let content = match item.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            let texts = parts.iter().enumerate().map(|(i, part)| {
                let kind = part.get("type").and_then(Value::as_str);
                match (kind, part.get("text").and_then(Value::as_str)) {
                    (Some("input_text" | "output_text" | "text"), Some(text)) => Ok(text),
                    (Some("refusal"), _) => {
                        Ok(part.get("refusal").and_then(Value::as_str).unwrap_or(""))
                    }
                    _ => Err(ApiError::unsupported(
                        &format!("{field}.content[{i}]"),
                        "content parts other than text (`input_text`, `output_text`)",
                    )),
                }
            });
            texts.collect::<Result<Vec<_>, _>>()?.join("\n")
        }
        _ => {
            return Err(ApiError::invalid(
                format!("{field}.content"),
                format!("`{field}.content` must be a string or a list of parts"),
            ))
        }
    };
    Ok(ChatMessage::new(role, content))
}

/// A `function_call` item as a chat tool call.
fn function_call_of(item: &Value, field: &str) -> Result<AssistantToolCall, ApiError> {
    Ok(AssistantToolCall::function(
        string_field(item, "call_id", field)?,
        string_field(item, "name", field)?,
        string_field(item, "arguments", field)?,
    ))
}

/// Consecutive calls belong to one assistant turn (with the text before them, if any).
fn push_call(messages: &mut Vec<ChatMessage>, call: AssistantToolCall) {
    match messages.last_mut() {
        Some(last) if last.role == "assistant" => {
            last.tool_calls.get_or_insert_with(Vec::new).push(call);
        }
        _ => messages.push(ChatMessage::assistant(None, vec![call])),
    }
}

/// A tool result: a string, or a list of text parts.
fn output_text(output: Option<&Value>, field: &str) -> Result<String, ApiError> {
    match output {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let texts = parts.iter().enumerate().map(|(i, part)| {
                part.get("text").and_then(Value::as_str).ok_or_else(|| {
                    ApiError::unsupported(
                        &format!("{field}.output[{i}]"),
                        "tool output parts other than text",
                    )
                })
            });
            Ok(texts.collect::<Result<Vec<_>, _>>()?.join("\n"))
        }
        _ => Err(ApiError::invalid(
            format!("{field}.output"),
            format!("`{field}.output` must be a string"),
        )),
    }
}
