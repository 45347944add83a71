//! Tools for a model whose template does not render them: a Hermes-style preamble in the system
//! message, and the conversation's tool calls and results written as the text that preamble
//! describes, so that any template renders them as plain messages.

use super::view::{TemplateMessage, TemplateToolCall};

/// The preamble's template, rendered with the request's `tools` (each as Python's `json.dumps`).
pub(super) const TOOL_PREAMBLE_TEMPLATE: &str = "# Tools\n\n\
You can call functions to help with the user's request. Their signatures are listed in JSON \
inside <tools></tools> tags:\n<tools>\n\
{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}\
</tools>\n\n\
To call a function, reply with a JSON object holding its name and arguments inside \
<tool_call></tool_call> tags, one block per call:\n\
<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";

/// `messages` with the `preamble` in the first system message (or a new one before them),
/// assistant tool calls as `<tool_call>` blocks after their content, and each run of `tool`
/// messages as one user message of `<tool_response>` blocks.
pub(super) fn with_tool_preamble<'a>(
    messages: Vec<TemplateMessage<'a>>,
    preamble: String,
) -> Vec<TemplateMessage<'a>> {
    let mut rewritten: Vec<TemplateMessage<'a>> = Vec::with_capacity(messages.len() + 1);
    let mut messages = messages.into_iter().peekable();
    match messages.next_if(|first| first.role == "system") {
        Some(system) => {
            let content = join_nonempty(&system.content, "\n\n", &preamble);
            rewritten.push(TemplateMessage { content, ..system });
        }
        None => rewritten.push(TemplateMessage::text("system", preamble)),
    }
    let mut after_tool_result = false;
    for message in messages {
        let is_tool_result = message.role == "tool";
        if !is_tool_result {
            rewritten.push(calls_as_text(message));
        } else {
            let response = format!("<tool_response>\n{}\n</tool_response>", message.content);
            match rewritten.last_mut() {
                Some(previous) if after_tool_result => {
                    previous.content = join_nonempty(&previous.content, "\n", &response)
                }
                _ => rewritten.push(TemplateMessage::text("user", response)),
            }
        }
        after_tool_result = is_tool_result;
    }
    rewritten
}

/// An assistant message's tool calls appended to its content as `<tool_call>` blocks.
fn calls_as_text(message: TemplateMessage<'_>) -> TemplateMessage<'_> {
    let Some(calls) = &message.tool_calls else {
        return message;
    };
    let blocks: Vec<String> = calls.iter().map(call_block).collect();
    let content = join_nonempty(&message.content, "\n", &blocks.join("\n"));
    TemplateMessage {
        content,
        tool_calls: None,
        ..message
    }
}

fn call_block(call: &TemplateToolCall<'_>) -> String {
    let name = serde_json::Value::from(call.name);
    format!(
        "<tool_call>\n{{\"name\": {name}, \"arguments\": {}}}\n</tool_call>",
        call.arguments_text
    )
}

/// `first`, `separator` and `second`, or just `second` when `first` is empty.
fn join_nonempty(first: &str, separator: &str, second: &str) -> String {
    if first.is_empty() {
        second.to_string()
    } else {
        format!("{first}{separator}{second}")
    }
}
