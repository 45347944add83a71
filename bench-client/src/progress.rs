//! The live one-line progress display on stderr: `completed/total, in flight, rate, errors`.
//!
//! Shown only when stderr is a terminal (nothing in logs or pipes), redrawn at most 5 times a
//! second by its own task from atomic counters, so the request path only bumps counters.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the line is redrawn (≤ 10 Hz).
const REDRAW_INTERVAL: Duration = Duration::from_millis(200);

/// Counters of a run in progress: the runner bumps them, the display reads them.
#[derive(Debug, Default)]
pub struct LiveCounters {
    in_flight: AtomicUsize,
    peak_in_flight: AtomicUsize,
    completed: AtomicUsize,
    errors: AtomicUsize,
}

impl LiveCounters {
    /// A request started (its HTTP request is about to go out).
    pub fn started(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_in_flight.fetch_max(now, Ordering::Relaxed);
    }

    /// A request ended.
    pub fn finished(&self, success: bool) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.completed.fetch_add(1, Ordering::Relaxed);
        if !success {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub fn peak_in_flight(&self) -> usize {
        self.peak_in_flight.load(Ordering::Relaxed)
    }

    pub fn completed(&self) -> usize {
        self.completed.load(Ordering::Relaxed)
    }

    pub fn errors(&self) -> usize {
        self.errors.load(Ordering::Relaxed)
    }
}

/// The display; dropping it (or [`Progress::finish`]) clears the line.
#[derive(Debug)]
pub struct Progress {
    redraw: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Starts redrawing (on the current tokio runtime) when `enabled` and stderr is a terminal.
    pub fn start(enabled: bool, total: usize, counters: Arc<LiveCounters>) -> Self {
        let redraw = (enabled && std::io::stderr().is_terminal())
            .then(|| tokio::spawn(redraw(total, counters)));
        Self { redraw }
    }

    pub fn finish(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(redraw) = self.redraw.take() {
            redraw.abort();
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
        }
    }
}

async fn redraw(total: usize, counters: Arc<LiveCounters>) {
    let started = Instant::now();
    let mut ticker = tokio::time::interval(REDRAW_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticker.tick().await;
        let line = render(total, &counters, started.elapsed().as_secs_f64());
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K{line}");
        let _ = stderr.flush();
    }
}

/// The progress line.
pub fn render(total: usize, counters: &LiveCounters, elapsed_s: f64) -> String {
    let completed = counters.completed();
    let rate = if elapsed_s > 0.0 {
        completed as f64 / elapsed_s
    } else {
        0.0
    };
    let percent = if total > 0 {
        100.0 * completed as f64 / total as f64
    } else {
        100.0
    };
    format!(
        "{completed}/{total} ({percent:.0}%) | in flight {} | {rate:.1} req/s | errors {} | {elapsed_s:.0} s",
        counters.in_flight(),
        counters.errors(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_line() {
        let counters = LiveCounters::default();
        counters.started();
        counters.started();
        counters.finished(true);
        counters.started();
        counters.finished(false);
        assert_eq!(counters.in_flight(), 1);
        assert_eq!(counters.peak_in_flight(), 2);
        assert_eq!(
            render(10, &counters, 2.0),
            "2/10 (20%) | in flight 1 | 1.0 req/s | errors 1 | 2 s"
        );
    }
}
