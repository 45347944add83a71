//! Chat messages as the OpenAI API spells them, tool calls and tool results included.

use serde::{Deserialize, Deserializer, Serialize};

use super::error::TemplateError;

/// One chat message as the OpenAI API spells it. Fields it does not know are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireMessage")]
pub struct ChatMessage {
    pub role: String,
    /// `null` or absent (an assistant message that only carries `tool_calls`) reads as empty text.
    pub content: MessageContent,
    /// Whether the message carried a `content` that is not `null` (the server refuses a user,
    /// system, developer or tool message without one, as OpenAI does).
    #[serde(skip)]
    pub has_content: bool,
    /// The calls an assistant message made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<AssistantToolCall>>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The participant's (or, for `tool` messages, the function's) name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// OpenAI's deprecated single call of an assistant message (`functions` era); the server
    /// turns it into `tool_calls` before templates see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
}

impl ChatMessage {
    /// A message with plain text content.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: MessageContent::Text(content.into()),
            has_content: true,
            tool_calls: None,
            tool_call_id: None,
            name: None,
            function_call: None,
        }
    }

    /// An assistant turn: its text (`None` where the turn wrote none, as a `null` content) and
    /// the calls it made (none: no `tool_calls`).
    pub fn assistant(content: Option<String>, tool_calls: Vec<AssistantToolCall>) -> Self {
        Self {
            has_content: content.is_some(),
            content: MessageContent::Text(content.unwrap_or_default()),
            tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
            ..Self::new("assistant", "")
        }
    }

    /// A tool's result, answering the call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new("tool", content)
        }
    }
}

impl AssistantToolCall {
    /// A call of `name` with `arguments` (JSON text), identified by `id`.
    pub fn function(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

/// A tool call in an assistant message of the conversation so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantToolCall {
    #[serde(default)]
    pub id: String,
    /// Always `"function"` in the OpenAI API.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

/// The function a tool call calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The arguments object as JSON text; empty (also when sent as `null` or left out) for a
    /// call without arguments, which templates see as `{}`, as vLLM reads it.
    #[serde(default, deserialize_with = "text_or_empty")]
    pub arguments: String,
}

fn text_or_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

fn function_kind() -> String {
    "function".to_string()
}

/// A message's content: a string, or a list of typed parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Default for MessageContent {
    fn default() -> Self {
        MessageContent::Text(String::new())
    }
}

/// A message as it arrives: `content` may be absent or `null`.
#[derive(Deserialize)]
struct WireMessage {
    role: String,
    #[serde(default)]
    content: Option<MessageContent>,
    #[serde(default)]
    tool_calls: Option<Vec<AssistantToolCall>>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

impl From<WireMessage> for ChatMessage {
    fn from(wire: WireMessage) -> Self {
        Self {
            role: wire.role,
            has_content: wire.content.is_some(),
            content: wire.content.unwrap_or_default(),
            tool_calls: wire.tool_calls,
            tool_call_id: wire.tool_call_id,
            name: wire.name,
            function_call: wire.function_call,
        }
    }
}

/// One part of a multi-part content, e.g. `{"type": "text", "text": "Hello"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl MessageContent {
    /// The content as one string; text parts are joined with newlines.
    pub fn to_text(&self) -> Result<String, TemplateError> {
        match self {
            MessageContent::Text(text) => Ok(text.clone()),
            MessageContent::Parts(parts) => {
                let texts = parts
                    .iter()
                    .map(|part| match (part.kind.as_str(), &part.text) {
                        ("text", Some(text)) => Ok(text.as_str()),
                        ("text", None) => Err(TemplateError::UnsupportedContent(
                            "text (without a `text` field)".into(),
                        )),
                        (kind, _) => Err(TemplateError::UnsupportedContent(kind.into())),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(texts.join("\n"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn tool_call_messages_read_and_write_the_openai_shape() {
        let json = r#"{"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}"#;
        let message: ChatMessage = serde_json::from_str(json).unwrap();
        assert_eq!(message.content.to_text().unwrap(), "");
        let calls = message.tool_calls.as_deref().unwrap();
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].kind, "function");
        assert_eq!(calls[0].function.arguments, r#"{"a": 1}"#);
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]}"#
        );
    }

    #[test]
    fn tool_results_and_absent_content() {
        let json = r#"{"role": "tool", "tool_call_id": "call_1", "name": "f", "content": "42"}"#;
        let message: ChatMessage = serde_json::from_str(json).unwrap();
        assert_eq!(message.tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(message.name.as_deref(), Some("f"));
        let message: ChatMessage = serde_json::from_str(r#"{"role": "assistant"}"#).unwrap();
        let absent = ChatMessage {
            has_content: false,
            ..ChatMessage::new("assistant", "")
        };
        assert_eq!(
            message, absent,
            "absent content reads as empty text, marked absent"
        );
        assert_eq!(
            serde_json::to_string(&ChatMessage::new("user", "hi")).unwrap(),
            r#"{"role":"user","content":"hi"}"#
        );
    }

    #[test]
    fn built_turns_equal_the_ones_read_from_openai_json() {
        let read = |json: &str| serde_json::from_str::<ChatMessage>(json).unwrap();
        let call = AssistantToolCall::function("c1", "w", "{}");
        assert_eq!(
            ChatMessage::assistant(None, vec![call.clone()]),
            read(
                r#"{"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]}"#
            )
        );
        assert_eq!(
            ChatMessage::assistant(Some("a".into()), vec![]),
            read(r#"{"role": "assistant", "content": "a"}"#)
        );
        assert_eq!(
            ChatMessage::assistant(None, vec![]),
            read(r#"{"role": "assistant", "content": null}"#)
        );
        assert_eq!(
            ChatMessage::tool_result("c1", "sunny"),
            read(r#"{"role": "tool", "tool_call_id": "c1", "content": "sunny"}"#)
        );
    }
}
