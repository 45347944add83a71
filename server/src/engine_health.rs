//! [`EngineHealth`]: the stall watchdog's verdict (see `watchdog`), shared with `/health`.

use std::sync::Mutex;

/// The watchdog's verdict, read by `/health`.
#[derive(Debug, Default)]
pub struct EngineHealth {
    stall: Mutex<Option<String>>,
}

impl EngineHealth {
    /// Why the engine is considered stalled, or `None` while it makes progress.
    pub fn stall_reason(&self) -> Option<String> {
        self.stall.lock().map(|s| s.clone()).unwrap_or(None)
    }

    /// The watchdog's new verdict: why the engine is stalled, or `None` once it progresses.
    pub(crate) fn set(&self, reason: Option<String>) {
        if let Ok(mut stall) = self.stall.lock() {
            *stall = reason;
        }
    }
}
