//! Datasets → workloads: every dataset becomes `num_prompts` [`RequestSpec`]s, reproducibly from
//! a seed (one `ChaCha8Rng` per build), with token counts by the model's own tokenizer.
//!
//! - `random`: random text of exact token lengths, optionally after one shared prefix.
//! - `prefix-repetition`: a few shared prefixes, each request one of them plus a unique suffix.
//! - `sharegpt`: every human turn of a ShareGPT file, replayed with its conversation's history.
//! - custom JSONL: one prompt or message list per line.
//! - `conversation` (and ShareGPT with `--multi-turn`): conversations for the closed-loop
//!   runner, `num_prompts` of them (see `conversation`).
//! - `trace`: a production trace replayed at its own times ([`trace`]; not through
//!   [`build_workload`], since it brings its arrival times).
//!
//! Selection: synthetic datasets generate exactly `num_prompts` requests. A file with fewer
//! requests than `num_prompts` is cycled: after its last request the workload starts again from
//! its first (JSONL in file order; ShareGPT in the same shuffled conversation order, each pass
//! under new conversation ids).

mod build;
mod conversation;
mod error;
mod exact_len;
mod jsonl;
mod length_sampler;
mod parallel;
mod prefix_repetition;
mod random;
mod read;
mod sharegpt;
mod sharegpt_turns;
#[cfg(test)]
pub(crate) mod test_support;
pub mod trace;

pub use build::{build_workload, dataset_size, DatasetConfig};
pub use conversation::{ConversationSource, SyntheticConversationConfig};
pub use error::DatasetError;
pub use exact_len::{ExactTextGenerator, TokenizedText};
pub use prefix_repetition::PrefixRepetitionConfig;
pub use random::{RandomConfig, RangeRatio};
