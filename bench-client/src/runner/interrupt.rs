//! Ctrl-C during a run: the first stops sending (requests in flight finish, and the run's result
//! is written with what was sent, as after `--duration`); a second one quits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::dispatch::StopFlag;

/// Watches for Ctrl-C while a run sends; stops watching when finished or dropped.
#[derive(Debug)]
pub(super) struct InterruptWatch {
    interrupted: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl InterruptWatch {
    /// Starts watching: Ctrl-C sets `stop` (no more requests are sent).
    pub fn start(stop: StopFlag) -> Self {
        let interrupted = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&interrupted);
        let task = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            flag.store(true, Ordering::Relaxed);
            stop.stop();
            eprintln!(
                "interrupted: no more requests are sent; the result is written once the requests \
                 in flight finish (Ctrl-C again quits at once, writing nothing)"
            );
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        });
        Self { interrupted, task }
    }

    /// Stops watching; whether Ctrl-C interrupted the run.
    pub fn finish(self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }
}

impl Drop for InterruptWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
