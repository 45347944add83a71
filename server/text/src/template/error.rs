//! Why a chat template could not be compiled or rendered.

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
    /// An assistant message's tool call whose `arguments` is not JSON text.
    #[error("the arguments of the assistant's tool call {name:?} are not valid JSON: {reason}")]
    InvalidToolCallArguments { name: String, reason: String },
}
