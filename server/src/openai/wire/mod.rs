//! The bodies the server writes, as typed shapes: each serializes to exactly what OpenAI's (and
//! vLLM's) servers write, fields absent or `null` as theirs are. Handlers and formats build these
//! and never assemble JSON by hand.

pub mod chat;
pub mod completion;
pub mod logprobs;
pub mod models;
pub mod prompt_logprobs;
pub mod responses;
pub mod responses_echo;
pub mod responses_events;
pub mod responses_input_items;
pub mod responses_usage;
pub mod tokenize;
pub mod tool_calls;
pub mod usage;

use utoipa::ToSchema;

/// vLLM's `stop_reason` as the document describes it: the stop token's id or the stop string
/// (`"repetition_detected"` for `repetition_detection`); `StopReason` serializes to these.
#[derive(Debug, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum StopReasonSchema {
    TokenId(u32),
    Text(String),
}

/// A field that is absent, `null`, or has a value: `None` leaves the key out (with
/// `skip_serializing_if = "Option::is_none"`), `Some(None)` writes `null`.
pub type Nullable<T> = Option<Option<T>>;
