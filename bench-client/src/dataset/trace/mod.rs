//! Trace replay: a production trace's requests, sent at the trace's own times with its own input
//! and output lengths.
//!
//! Formats (one parser each, all giving [`TraceRequest`]s):
//!
//! - `mooncake` (Mooncake's FAST'25 traces): JSONL, `{"timestamp": <ms>, "input_length",
//!   "output_length", "hash_ids": [...]}`; each hash id names one block of `block_size` prompt
//!   tokens (512 in Mooncake's traces), equal ids are equal blocks.
//! - `burstgpt` (BurstGPT): CSV with `Timestamp` (seconds), `Model`, `Request tokens`,
//!   `Response tokens`; optionally only one model's rows.
//! - `azure` (Azure LLM inference traces): CSV `TIMESTAMP,ContextTokens,GeneratedTokens`, the
//!   timestamp a date and time (`2023-11-16 18:15:46.6805900`).
//!
//! Requests are replayed in timestamp order (a stable sort: equal times keep the file's order).
//! A record with 0 input or 0 output tokens (BurstGPT's failed requests) cannot be replayed and
//! is skipped (counted in the summary). Prompts: see [`prompts`]; arrival times: see
//! [`arrivals`].

mod arrivals;
mod azure;
mod burstgpt;
mod csv;
mod mooncake;
mod prompts;
mod replay;
mod request;
mod summary;

pub use replay::{build_trace, TraceWorkload};
pub use request::{LineError, ParsedTrace, TraceConfig, TraceFormat, TraceRequest};
pub use summary::TraceSummary;
