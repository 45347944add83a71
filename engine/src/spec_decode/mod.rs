//! Speculative decoding: a running sequence's next few tokens are proposed cheaply, the target
//! model scores them all in one step (each proposal is an extra query row of the same paged step),
//! and the longest prefix the target's own sampling agrees with is kept, plus the target's token
//! at the first disagreement. The output is the target model's: greedy rows are token-for-token
//! identical, sampled rows have the target's distribution (`sampling::verify`).
//!
//! - `config`: `--speculative-config` (vLLM's JSON) and its checks.
//! - `ngram`: prompt lookup — the tokens that followed the latest earlier occurrence of the
//!   sequence's last n tokens (proposed by the scheduler).
//! - a draft model (`runner::draft`): a smaller model decoding greedily ahead of the target,
//!   in the runner, into the rows the scheduler reserved (`PLACEHOLDER_TOKEN_ID`).
//! - `counters`: what was proposed and accepted (vLLM's `spec_decode_*` metrics).

pub mod config;
pub mod counters;
pub mod draft_model;
pub mod ngram;

/// The token id in a reserved proposal row until the runner's draft model writes its proposal.
pub const PLACEHOLDER_TOKEN_ID: u32 = 0;

pub use config::{DraftModelConfig, NgramConfig, SpeculativeConfig, SpeculativeMethod};
pub use counters::SpecDecodeCounters;
