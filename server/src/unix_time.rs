//! Wall-clock times as Unix seconds, as the API (`created`), the metrics and the event streams
//! write them: one conversion for the whole server.

use std::time::{SystemTime, UNIX_EPOCH};

/// `at` in seconds since the Unix epoch (0 for a time before it).
pub fn unix_s(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// Now, in whole seconds since the Unix epoch (OpenAI's `created`).
pub fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn times_are_seconds_since_the_epoch_and_earlier_ones_are_zero() {
        let at = UNIX_EPOCH + Duration::from_millis(1500);
        assert_eq!(unix_s(at), 1.5);
        assert_eq!(unix_s(UNIX_EPOCH - Duration::from_secs(1)), 0.0);
        let now = unix_now_s();
        assert!(now > 1_700_000_000, "{now}");
        assert!((unix_s(SystemTime::now()) - now as f64).abs() < 2.0);
    }
}
