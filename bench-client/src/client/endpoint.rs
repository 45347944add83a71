//! Which OpenAI endpoint a run's requests go to.

use serde::{Deserialize, Serialize};

/// Which OpenAI endpoint requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/chat/completions`, the prompt sent as `messages`.
    #[default]
    Chat,
    /// `/v1/completions`, the prompt sent as text.
    Completions,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
        }
    }
}
