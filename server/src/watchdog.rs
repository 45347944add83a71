//! The engine progress watchdog (`--engine-stall-timeout`): when sequences are waiting or
//! running and no engine step has completed for that long, the engine is stalled — `/health`
//! answers 503 with the reason, `pagoda_engine_stalled` is 1 and an error is logged — until steps
//! resume (or the work goes away), which clears it by itself. A stuck engine must not look
//! healthy to a load balancer or an orchestrator.

use std::time::{Duration, Instant};

use crate::state::SharedState;

/// What the watchdog sees at one look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    pub num_steps_total: u64,
    /// Sequences the engine reports waiting or running, plus those the server submitted that
    /// have no first token yet (a stuck engine stops reporting).
    pub num_pending: usize,
}

/// A change of verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    Stalled { reason: String },
    Recovered { stalled_for: Duration },
}

/// Decides from successive observations whether the engine is stalled.
#[derive(Debug)]
pub struct ProgressTracker {
    timeout: Duration,
    last_steps: u64,
    /// The last time a step completed or there was nothing to do.
    last_progress: Instant,
    stalled_since: Option<Instant>,
}

impl ProgressTracker {
    pub fn new(timeout: Duration, now: Instant) -> Self {
        Self {
            timeout,
            last_steps: 0,
            last_progress: now,
            stalled_since: None,
        }
    }

    pub fn observe(&mut self, now: Instant, seen: Observation) -> Option<Transition> {
        let progressed = seen.num_steps_total != self.last_steps || seen.num_pending == 0;
        self.last_steps = seen.num_steps_total;
        if progressed {
            self.last_progress = now;
            let since = self.stalled_since.take()?;
            return Some(Transition::Recovered {
                stalled_for: now.saturating_duration_since(since),
            });
        }
        let waited = now.saturating_duration_since(self.last_progress);
        if self.stalled_since.is_some() || waited < self.timeout {
            return None;
        }
        self.stalled_since = Some(now);
        Some(Transition::Stalled {
            reason: format!(
                "engine stalled: {} sequences pending and no engine step completed for {:.1} s \
                 (--engine-stall-timeout {} s)",
                seen.num_pending,
                waited.as_secs_f64(),
                self.timeout.as_secs_f64()
            ),
        })
    }
}

/// How often the watchdog looks: often enough to flag a stall within a tenth of the timeout
/// (at most every second).
pub fn poll_interval(timeout: Duration) -> Duration {
    (timeout / 10).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// Watches the engine until the process ends.
pub async fn run(state: SharedState, timeout: Duration) {
    let mut tracker = ProgressTracker::new(timeout, Instant::now());
    let mut ticks = tokio::time::interval(poll_interval(timeout));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let stats = state.engine.stats();
        let seen = Observation {
            num_steps_total: stats.num_steps_total,
            num_pending: stats.num_running + stats.num_waiting + state.admission.num_waiting(),
        };
        match tracker.observe(Instant::now(), seen) {
            Some(Transition::Stalled { reason }) => {
                tracing::error!(
                    num_pending = seen.num_pending,
                    "{reason}; /health answers 503"
                );
                state.metrics.record_engine_stalled(true);
                state.engine_health.set(Some(reason));
            }
            Some(Transition::Recovered { stalled_for }) => {
                tracing::warn!(
                    stalled_for_s = stalled_for.as_secs_f64(),
                    "the engine is making progress again; /health answers 200"
                );
                state.metrics.record_engine_stalled(false);
                state.engine_health.set(None);
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(10);

    fn seen(num_steps_total: u64, num_pending: usize) -> Observation {
        Observation {
            num_steps_total,
            num_pending,
        }
    }

    #[test]
    fn pending_work_without_steps_past_the_timeout_is_a_stall_until_steps_resume() {
        let start = Instant::now();
        let mut tracker = ProgressTracker::new(TIMEOUT, start);
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(tracker.observe(at(1), seen(5, 2)), None);
        assert_eq!(tracker.observe(at(10), seen(5, 2)), None, "9 s < 10 s");
        let Some(Transition::Stalled { reason }) = tracker.observe(at(11), seen(5, 2)) else {
            panic!("a stall after 10 s without a step");
        };
        assert!(reason.contains("2 sequences pending"), "{reason}");
        assert_eq!(tracker.observe(at(20), seen(5, 2)), None, "reported once");
        assert_eq!(
            tracker.observe(at(21), seen(6, 2)),
            Some(Transition::Recovered {
                stalled_for: Duration::from_secs(10)
            })
        );
        assert_eq!(tracker.observe(at(22), seen(7, 2)), None);
    }

    #[test]
    fn an_idle_engine_is_never_stalled_and_work_going_away_clears_a_stall() {
        let start = Instant::now();
        let mut tracker = ProgressTracker::new(TIMEOUT, start);
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(tracker.observe(at(100), seen(3, 0)), None, "idle for long");
        assert_eq!(tracker.observe(at(105), seen(3, 1)), None);
        assert!(matches!(
            tracker.observe(at(116), seen(3, 1)),
            Some(Transition::Stalled { .. })
        ));
        assert!(matches!(
            tracker.observe(at(117), seen(3, 0)),
            Some(Transition::Recovered { .. })
        ));
    }

    #[test]
    fn the_poll_interval_is_a_tenth_of_the_timeout_within_bounds() {
        assert_eq!(
            poll_interval(Duration::from_secs(2)),
            Duration::from_millis(200)
        );
        assert_eq!(
            poll_interval(Duration::from_secs(60)),
            Duration::from_secs(1)
        );
        assert_eq!(
            poll_interval(Duration::from_millis(100)),
            Duration::from_millis(50)
        );
    }
}
