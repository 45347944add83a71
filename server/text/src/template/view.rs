//! What a chat template sees of a message, shaped as transformers and vLLM pass it to Hugging
//! Face templates.

use minijinja::Value;
use serde::Serialize;

use super::error::TemplateError;
use super::messages::{AssistantToolCall, ChatMessage};

/// A message as a template sees it.
#[derive(Debug, Serialize)]
pub(super) struct TemplateMessage<'a> {
    pub(super) role: &'a str,
    /// Plain text; empty for an assistant message without content, as vLLM passes it.
    pub(super) content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_calls: Option<Vec<TemplateToolCall<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<&'a str>,
}

/// A tool call as a template sees it: the OpenAI object with `function.arguments` parsed, plus
/// `name` and `arguments` at the top (templates write `tool_call.arguments | tojson`, some after
/// `{% set tool_call = tool_call.function %}`).
#[derive(Debug, Serialize)]
pub(super) struct TemplateToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    function: TemplateFunction<'a>,
    pub(super) name: &'a str,
    arguments: Value,
    /// The arguments' JSON text as the request gave it.
    #[serde(skip)]
    pub(super) arguments_text: &'a str,
}

#[derive(Debug, Serialize)]
struct TemplateFunction<'a> {
    name: &'a str,
    arguments: Value,
}

impl<'a> TemplateMessage<'a> {
    /// The template's view of `message`; an empty `tool_calls` list is left out, as vLLM does.
    pub(super) fn of(message: &'a ChatMessage) -> Result<Self, TemplateError> {
        let tool_calls = match message.tool_calls.as_deref() {
            None | Some([]) => None,
            Some(calls) => Some(
                calls
                    .iter()
                    .map(TemplateToolCall::of)
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(Self {
            role: &message.role,
            content: message.content.to_text()?,
            tool_calls,
            tool_call_id: message.tool_call_id.as_deref(),
            name: message.name.as_deref(),
        })
    }

    /// A message with text content only.
    pub(super) fn text(role: &'a str, content: String) -> Self {
        Self {
            role,
            content,
            tool_calls: None,
            tool_call_id: None,
            name: None,
        }
    }
}

impl<'a> TemplateToolCall<'a> {
    fn of(call: &'a AssistantToolCall) -> Result<Self, TemplateError> {
        let name = call.function.name.as_str();
        // A call without arguments (agents replay `""`) has an empty object of them.
        let arguments_text = match call.function.arguments.trim() {
            "" => "{}",
            text => text,
        };
        // Parsed into a template value directly, so objects keep the order the request gave.
        let arguments: Value = serde_json::from_str(arguments_text).map_err(|e| {
            TemplateError::InvalidToolCallArguments {
                name: name.to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(Self {
            id: &call.id,
            kind: &call.kind,
            function: TemplateFunction {
                name,
                arguments: arguments.clone(),
            },
            name,
            arguments,
            arguments_text,
        })
    }
}
