//! What the accept loop does when `accept` fails: a connection that vanished before it was
//! accepted is skipped; running out of file descriptors or memory backs off (5 ms, doubling up
//! to 1 s) and is logged at most every 10 s, so the loop neither spins nor floods the log.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

const FIRST_DELAY: Duration = Duration::from_millis(5);
const MAX_DELAY: Duration = Duration::from_secs(1);
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The accept loop's back-off state.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    delay: Option<Duration>,
    last_logged: Option<Instant>,
    num_suppressed: u64,
}

impl AcceptBackoff {
    /// A successful accept ends the back-off.
    pub fn reset(&mut self) {
        self.delay = None;
    }

    /// How long to wait before accepting again, or `None` to go on at once.
    pub fn on_error(&mut self, error: &std::io::Error) -> Option<Duration> {
        if is_per_connection(error) {
            return None;
        }
        let delay = self.delay.map_or(FIRST_DELAY, |d| (d * 2).min(MAX_DELAY));
        self.delay = Some(delay);
        let now = Instant::now();
        if self
            .last_logged
            .is_none_or(|at| now.duration_since(at) >= LOG_EVERY)
        {
            tracing::error!(
                %error,
                num_suppressed = self.num_suppressed,
                retry_in_ms = delay.as_millis() as u64,
                "cannot accept connections (out of file descriptors? raise `ulimit -n` or lower \
                 --max-connections); closing an idle connection and retrying"
            );
            self.last_logged = Some(now);
            self.num_suppressed = 0;
        } else {
            self.num_suppressed += 1;
        }
        Some(delay)
    }
}

/// Errors that concern only the connection being accepted.
fn is_per_connection(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::ConnectionAborted
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionRefused
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_descriptors_backs_off_doubling_up_to_a_second() {
        let mut backoff = AcceptBackoff::default();
        let emfile = std::io::Error::from_raw_os_error(24);
        let delays: Vec<_> = (0..10).filter_map(|_| backoff.on_error(&emfile)).collect();
        assert_eq!(delays[0], FIRST_DELAY);
        assert_eq!(delays[1], FIRST_DELAY * 2);
        assert_eq!(*delays.last().expect("ten"), MAX_DELAY);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]));
        backoff.reset();
        assert_eq!(backoff.on_error(&emfile), Some(FIRST_DELAY));
    }

    #[test]
    fn a_vanished_connection_is_skipped_without_waiting() {
        let mut backoff = AcceptBackoff::default();
        let aborted = std::io::Error::from(ErrorKind::ConnectionAborted);
        assert_eq!(backoff.on_error(&aborted), None);
    }
}
