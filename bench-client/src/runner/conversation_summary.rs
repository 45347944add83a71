//! How a run's conversations went (`pagoda.conversations` in the result).

use serde::{Deserialize, Serialize};

/// How a run's conversations went (`pagoda.conversations` in the result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    /// Scheduled to start.
    pub num_conversations: usize,
    pub num_started: usize,
    /// Every turn sent and successful.
    pub num_completed: usize,
    /// Ended by a failed turn.
    pub num_failed: usize,
    /// Stopped by the end of `--duration`.
    pub num_cut_short: usize,
    pub num_turns_sent: usize,
    /// Turns sent per conversation started.
    pub mean_turns: f64,
    pub think_time_ms: f64,
    pub session_header: Option<String>,
}
