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

mod trace;
mod writer;

pub use trace::{RequestTrace, WriteKind};
pub use writer::TimelineWriter;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Converts monotonic instants to Unix seconds from one reading of the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct UnixClock {
    anchor: Instant,
    anchor_unix_s: f64,
}

impl UnixClock {
    pub fn now() -> Self {
        let anchor_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Self {
            anchor: Instant::now(),
            anchor_unix_s,
        }
    }

    /// `at` in Unix seconds.
    pub fn unix_s(&self, at: Instant) -> f64 {
        match at.checked_duration_since(self.anchor) {
            Some(after) => self.anchor_unix_s + after.as_secs_f64(),
            None => self.anchor_unix_s - self.anchor.duration_since(at).as_secs_f64(),
        }
    }
}

/// When the request head was read: set by the request-id layer, read by the handlers.
#[derive(Debug, Clone, Copy)]
pub struct ReceivedAt(pub Instant);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn instants_map_to_unix_seconds_on_both_sides_of_the_anchor() {
        let clock = UnixClock::now();
        let later = clock.anchor + Duration::from_millis(1500);
        let earlier = clock.anchor - Duration::from_millis(250);
        assert!((clock.unix_s(later) - clock.anchor_unix_s - 1.5).abs() < 1e-9);
        assert!((clock.anchor_unix_s - clock.unix_s(earlier) - 0.25).abs() < 1e-9);
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970");
        assert!((clock.unix_s(Instant::now()) - wall.as_secs_f64()).abs() < 1.0);
    }
}
