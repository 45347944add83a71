//! `--request-timeline PATH`: the server's own account of every request, one JSON line each, as
//! ground truth for benchmark clients (`pagoda-bench align` lines a client's measurements up with
//! it). A line is written when the request's response is done (or abandoned):
//!
//! ```json
//! {"request_id": "pagoda-bench-0-17", "received_unix_s": …, "queued_unix_s": …,
//!  "scheduled_unix_s": …, "first_token_unix_s": …, "finished_unix_s": …,
//!  "prompt_tokens": 64, "completion_tokens": 32, "num_preemptions": 0, "stream": true,
//!  "completed": true, "writes": [[t, "opening"], [t, "delta"], …, [t, "done"]]}
//! ```
//!
//! - `received`: the request head was read and routed (before its body was read);
//! - `queued`, `scheduled`, `first_token`, `finished`: the engine's own times for the first
//!   choice (the sequence was queued, first scheduled, produced its first token, finished);
//! - `writes`: each SSE event when the response stream handed it to hyper, which writes it to
//!   the socket in the same task poll (no buffering between): `opening` (the role chunk),
//!   `delta` (a chunk with generated text), `finish` (a choice's finish reason), `usage`,
//!   `error`, `done` (`[DONE]`); a non-streamed response has one `response` write;
//! - `completed`: false when the client went away before the stream ended.
//!
//! Times are Unix seconds from the server's clock ([`UnixClock`]: one reading of the wall clock
//! at start, monotonic time after it, so a clock step during a run does not bend the timeline).
//! Lines go through a channel to a writer thread: the request path never waits for the disk.

mod clock;
mod trace;
mod writer;

pub use clock::{ReceivedAt, UnixClock};
pub use trace::{RequestTrace, WriteKind};
pub use writer::TimelineWriter;
