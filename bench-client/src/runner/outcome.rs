//! What a run left ([`RunOutcome`]), or why it could not run ([`RunError`]).

use serde::{Deserialize, Serialize};

use super::conversation_summary::ConversationSummary;
use super::health::ClientHealth;
use super::probes::ProbeSummary;
use crate::client::ClientError;
use crate::record::RequestRecord;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{num_specs} requests but {num_arrivals} arrival times")]
    LengthMismatch {
        num_specs: usize,
        num_arrivals: usize,
    },
    #[error("arrival time {index} is {value}: times must be finite, >= 0 and non-decreasing")]
    BadSchedule { index: usize, value: f64 },
    #[error("max_concurrency must be at least 1")]
    ZeroConcurrency,
    #[error(
        "the probe request rate is {0}: it must be a finite number of requests per second > 0"
    )]
    BadProbeRate(f64),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("cannot start the dispatcher thread: {0}")]
    Thread(std::io::Error),
    #[error("not a conversation workload: {0}")]
    BadConversation(String),
}

/// What a run left.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOutcome {
    /// One per request sent, by index (warm-ups excluded).
    pub records: Vec<RequestRecord>,
    /// Wall-clock time of `t = 0`, seconds since the Unix epoch.
    pub start_unix_s: f64,
    /// From `t = 0` to the end of the last request.
    pub duration_s: f64,
    pub num_scheduled: usize,
    /// Scheduled but not sent: past `max_duration`.
    pub num_not_sent: usize,
    pub num_warmups: usize,
    pub num_warmup_errors: usize,
    pub client: ClientHealth,
    /// Ctrl-C stopped the sending: the requests sent before are all there.
    #[serde(default)]
    pub interrupted: bool,
    /// How the conversations went, for a conversation run ([`super::run_conversations`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<ConversationSummary>,
    /// How the probe requests went (`--probe-request-rate`); their records are not in `records`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeSummary>,
}
