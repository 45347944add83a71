//! What a run left ([`RunOutcome`]), or why it could not run ([`RunError`]).

use serde::{Deserialize, Serialize};

use super::cpu::CpuUsage;
use super::dispatch::DispatchReport;
use super::health::{ClientHealth, RunEvidence};
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

/// What every kind of run has collected when its last request is in.
pub(super) struct RunEnd {
    pub records: Vec<RequestRecord>,
    /// Per request: the HTTP request started − free to go.
    pub client_lags_s: Vec<f64>,
    pub dispatch: DispatchReport,
    pub peak_in_flight: usize,
    pub cpu: Option<CpuUsage>,
    pub start_unix_s: f64,
    pub duration_s: f64,
    pub num_scheduled: usize,
    pub num_not_sent: usize,
    pub num_warmups: usize,
    pub num_warmup_errors: usize,
    /// The run's `max_concurrency`, which the client's health is judged against.
    pub max_concurrency: Option<usize>,
}

/// What only some runs report beside their records.
#[derive(Default)]
pub(super) struct RunExtras {
    pub interrupted: bool,
    pub conversations: Option<ConversationSummary>,
    pub probes: Option<ProbeSummary>,
}

impl RunOutcome {
    /// The outcome of a run that ended as `end`.
    pub(super) fn of_run(end: RunEnd, extras: RunExtras) -> Self {
        let evidence = RunEvidence {
            dispatch: &end.dispatch,
            client_lags_s: &end.client_lags_s,
            peak_in_flight: end.peak_in_flight,
            max_concurrency: end.max_concurrency,
            cpu: end.cpu,
        };
        Self {
            client: ClientHealth::of_run(evidence, &end.records),
            records: end.records,
            start_unix_s: end.start_unix_s,
            duration_s: end.duration_s,
            num_scheduled: end.num_scheduled,
            num_not_sent: end.num_not_sent,
            num_warmups: end.num_warmups,
            num_warmup_errors: end.num_warmup_errors,
            interrupted: extras.interrupted,
            conversations: extras.conversations,
            probes: extras.probes,
        }
    }
}
