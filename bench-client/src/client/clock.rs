//! [`RunClock`]: the run's monotonic clock, which every timestamp of a record is read on.

use std::time::Instant;

/// The run's clock: seconds since `start` (`t = 0`), negative before it (warm-ups).
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    pub start: Instant,
}

impl RunClock {
    pub fn secs(&self, at: Instant) -> f64 {
        match at.checked_duration_since(self.start) {
            Some(after) => after.as_secs_f64(),
            None => -(self.start - at).as_secs_f64(),
        }
    }

    pub fn now_s(&self) -> f64 {
        self.secs(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn clock_is_signed() {
        let clock = RunClock {
            start: Instant::now() + Duration::from_secs(1),
        };
        assert!(clock.now_s() < -0.5);
        assert!((clock.secs(clock.start + Duration::from_millis(250)) - 0.25).abs() < 1e-9);
    }
}
