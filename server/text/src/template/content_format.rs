//! How templates see a message's `content`: as a string (most templates), or as OpenAI's list of
//! parts, `[{"type": "text", "text": …}]`, which templates written for multimodal models loop
//! over (vLLM's `--chat-template-content-format string|openai`). `auto` finds out by rendering a
//! probe conversation both ways: a template that shows the probe text only from parts wants
//! parts.

use serde_json::{json, Value};

/// The text of the probe message (a template shows it where it writes the user's content).
const PROBE_TEXT: &str = "pagoda-content-format-probe";

/// What a template is given as each message's `content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContentFormat {
    /// The text itself (parts joined).
    #[default]
    String,
    /// `[{"type": "text", "text": …}]` (no parts for an empty content).
    OpenAi,
}

impl ContentFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ContentFormat::String => "string",
            ContentFormat::OpenAi => "openai",
        }
    }

    /// `messages` (the template's view, serialised) with every `content` in this format.
    pub(super) fn apply(self, mut messages: Value) -> Value {
        if self == ContentFormat::String {
            return messages;
        }
        for message in messages.as_array_mut().into_iter().flatten() {
            let Some(content) = message.get_mut("content") else {
                continue;
            };
            let text = content.as_str().unwrap_or_default().to_string();
            *content = match text.is_empty() {
                true => json!([]),
                false => json!([{"type": "text", "text": text}]),
            };
        }
        messages
    }

    /// The format a template wants: `render` draws a one-message conversation (the probe text
    /// as the user's content) in a format, `None` when the template refuses it.
    pub(super) fn detect(render: impl Fn(ContentFormat, &str) -> Option<String>) -> Self {
        let shows_probe =
            |format| render(format, PROBE_TEXT).is_some_and(|t| t.contains(PROBE_TEXT));
        if !shows_probe(ContentFormat::String) && shows_probe(ContentFormat::OpenAi) {
            ContentFormat::OpenAi
        } else {
            ContentFormat::String
        }
    }
}
