//! Speculative decoding: a running sequence's next few tokens are proposed cheaply, the target
//! model scores them all in one step (each proposal is an extra query row of the same paged step),
//! and the longest prefix the target's own sampling agrees with is kept, plus the target's token
//! at the first disagreement. The output is the target model's: greedy rows are token-for-token
//! identical, sampled rows have the target's distribution (`sampling::verify`).
//!
//! - `config`: `--speculative-config` (vLLM's JSON) and its checks.
//! - `ngram`: prompt lookup — the tokens that followed the latest earlier occurrence of the
//!   sequence's last n tokens.
//! - `counters`: what was proposed and accepted (vLLM's `spec_decode_*` metrics).

pub mod config;
pub mod counters;
pub mod ngram;

pub use config::{NgramConfig, SpeculativeConfig, SpeculativeMethod};
pub use counters::SpecDecodeCounters;
