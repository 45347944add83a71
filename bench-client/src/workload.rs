//! What a benchmark sends: one [`RequestSpec`] per request, built by a dataset, independent of
//! the endpoint it goes to.

use serde::{Deserialize, Serialize};

/// One chat message (the bench client keeps its own copy of OpenAI's types, so that an
/// end-to-end test catches drift between client and server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// The prompt of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prompt {
    /// Text, sent as one user message to chat endpoints and as `prompt` to completions.
    Text(String),
    /// A conversation (multi-turn history then the new user turn). Sent to completions as the
    /// messages' contents joined with newlines.
    Messages(Vec<Message>),
}

impl Prompt {
    /// The prompt as one text, for the completions endpoint.
    pub fn as_text(&self) -> String {
        match self {
            Prompt::Text(text) => text.clone(),
            Prompt::Messages(messages) => messages
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The prompt as chat messages.
    pub fn as_messages(&self) -> Vec<Message> {
        match self {
            Prompt::Text(text) => vec![Message {
                role: "user".into(),
                content: text.clone(),
            }],
            Prompt::Messages(messages) => messages.clone(),
        }
    }
}

/// One request of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestSpec {
    pub prompt: Prompt,
    /// Prompt tokens by the model's tokenizer (the text's own tokens, no chat template).
    pub input_tokens: usize,
    /// Tokens to generate (`max_tokens`).
    pub output_tokens: usize,
    /// `(conversation_id, turn_index)` for a turn of a multi-turn conversation (ShareGPT): ids are
    /// unique within a workload, turns count from 0, and turn `t` always comes after turn `t − 1`
    /// in the workload. `None` for single requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<(usize, usize)>,
    /// The `model` this request names instead of the run's: its LoRA adapter
    /// (`--lora-modules`, see [`crate::lora`]). `None`: the run's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl RequestSpec {
    /// A single text request, naming the run's model.
    pub fn text(prompt: impl Into<String>, input_tokens: usize, output_tokens: usize) -> Self {
        Self {
            prompt: Prompt::Text(prompt.into()),
            input_tokens,
            output_tokens,
            conversation: None,
            model: None,
        }
    }
}
