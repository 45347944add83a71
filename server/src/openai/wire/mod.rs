//! The bodies the server writes, as typed shapes: each serializes to exactly what OpenAI's (and
//! vLLM's) servers write, fields absent or `null` as theirs are. Handlers and formats build these
//! and never assemble JSON by hand.

pub mod chat;
pub mod completion;
pub mod logprobs;
pub mod usage;

/// A field that is absent, `null`, or has a value: `None` leaves the key out (with
/// `skip_serializing_if = "Option::is_none"`), `Some(None)` writes `null`.
pub type Nullable<T> = Option<Option<T>>;
