//! Chat messages → prompt text, by the model's own Jinja chat template.
//!
//! Rendered with minijinja configured like transformers' `apply_chat_template`: `trim_blocks` and
//! `lstrip_blocks` on, Python string methods (`.strip()`, `.startswith()`, ...) through
//! minijinja-contrib's pycompat, `raise_exception(msg)`, `tojson` as Python's `json.dumps`, and `{% break %}`/`{% continue %}`.
//! Templates see `messages` (each with `role` and `content` as plain text), `add_generation_prompt`,
//! `bos_token` and `eos_token`.

mod tojson;

use minijinja::{context, Environment, ErrorKind};
use serde::{Deserialize, Serialize};

/// ChatML, for models whose files carry no chat template.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}\
{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}\
{% endfor %}\
{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const TEMPLATE_NAME: &str = "chat_template";

/// Why a chat template could not be compiled or rendered.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TemplateError {
    /// The template source does not parse.
    #[error("invalid chat template: {0}")]
    Syntax(String),
    /// Rendering failed, including a `raise_exception(...)` from the template itself.
    #[error("chat template rendering failed: {0}")]
    Render(String),
    /// A message content part that is not text (images, audio, ...).
    #[error("unsupported message content part of type {0:?}: only \"text\" parts are supported")]
    UnsupportedContent(String),
}

/// One chat message as the OpenAI API spells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: MessageContent,
}

impl ChatMessage {
    /// A message with plain text content.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: MessageContent::Text(content.into()),
        }
    }
}

/// A message's content: a string, or a list of typed parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
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

/// What a template sees of a message.
#[derive(Serialize)]
struct TemplateMessage<'a> {
    role: &'a str,
    content: String,
}

/// A compiled chat template plus the special tokens it may refer to.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl ChatTemplate {
    /// Compiles `source`; a syntax error is reported with its line.
    pub fn new(
        source: &str,
        bos_token: Option<String>,
        eos_token: Option<String>,
    ) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_filter("tojson", tojson::tojson);
        env.add_template_owned(TEMPLATE_NAME, source.to_string())
            .map_err(|e| TemplateError::Syntax(describe(&e)))?;
        Ok(Self {
            env,
            bos_token,
            eos_token,
        })
    }

    /// The prompt for `messages`; with `add_generation_prompt`, ends with the assistant's turn header.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        let messages = messages
            .iter()
            .map(|m| {
                Ok(TemplateMessage {
                    role: &m.role,
                    content: m.content.to_text()?,
                })
            })
            .collect::<Result<Vec<_>, TemplateError>>()?;
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| TemplateError::Render(describe(&e)))?;
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos_token.as_deref().unwrap_or(""),
                eos_token => self.eos_token.as_deref().unwrap_or(""),
            })
            .map_err(|e| TemplateError::Render(describe(&e)))
    }
}

/// `raise_exception(message)`, as transformers defines it for templates to reject a conversation.
fn raise_exception(message: String) -> Result<minijinja::Value, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
}

/// The error with its chain of causes (a failing call inside a filter, ...).
fn describe(e: &minijinja::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests;
