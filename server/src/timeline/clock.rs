//! Unix seconds from the monotonic clock, and when a request arrived.

use std::time::{Instant, SystemTime};

use crate::unix_time::unix_s;

/// Converts monotonic instants to Unix seconds from one reading of the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct UnixClock {
    anchor: Instant,
    anchor_unix_s: f64,
}

impl UnixClock {
    pub fn now() -> Self {
        let anchor_unix_s = unix_s(SystemTime::now());
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
    use std::time::{Duration, UNIX_EPOCH};

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
