//! Sends a workload on an exact schedule and collects one [`RequestRecord`] per request.
//!
//! - **Open loop on an absolute schedule.** Request `i` is due at `start + arrival_times_s[i]`;
//!   a dispatcher thread sleeps until each due time, computed from the start every time (never a
//!   relative sleep), and spawns one task per request (`dispatch`).
//! - **Closed loop / both.** With `max_concurrency`, a request waits for a slot. Its
//!   `target_send_s` stays the schedule's, so a record's `send_lag_s()` includes the wait for a
//!   slot (a closed-loop run is the schedule "everything at 0": its send lag is its queueing in
//!   the client). What the client itself adds is reported apart, in [`ClientHealth`]:
//!   `slot_wait_s` (due → slot free), `dispatcher_lag_s` (free → handed to the runtime) and
//!   `client_lag_s` (free → the HTTP request started). Without a limit the last equals the
//!   records' send lag.
//! - **No hidden caps.** One HTTP/1.1 connection per in-flight request, an idle pool without a
//!   per-host limit, no per-worker limits: the only concurrency limit is `max_concurrency`.
//! - **Evidence the client kept up**: the lags above, the peak number in flight, target vs
//!   achieved send rate and the process's CPU use ([`CpuUsage`]).
//!
//! The run ends when the record channel closes: when the dispatcher is done and every request
//! task has sent its record. Run it on a multi-threaded tokio runtime.

mod conversation;
mod cpu;
mod dispatch;
mod health;
mod lag;
#[cfg(test)]
pub(crate) mod test_server;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{mpsc, watch, Semaphore};

pub use conversation::{run_conversations, ConversationConfig, ConversationSummary};
pub use cpu::{CpuMonitor, CpuUsage};
pub use health::ClientHealth;
pub use lag::LagSummary;

use crate::client::{Client, ClientError, RequestConfig, RunClock, TokenCounter};
use crate::progress::{LiveCounters, Progress};
use crate::record::RequestRecord;
use crate::workload::RequestSpec;
use dispatch::{Dispatch, StopFlag, Ticket};
use health::send_rates;

/// `t = 0` is this long after `run` has warmed up, so the dispatcher thread is ready for the
/// first request.
const START_DELAY: Duration = Duration::from_millis(20);

/// How a run is sent.
#[derive(Clone)]
pub struct RunConfig {
    /// Endpoint, URL, model, key, headers, sampling, per-request timeout, client id.
    pub request: RequestConfig,
    /// At most this many requests in flight; `None`: no limit (pure open loop).
    pub max_concurrency: Option<usize>,
    /// Requests sent before `t = 0` (the workload's first ones, cycled) and left out of the
    /// records; they also open connections.
    pub num_warmups: usize,
    /// No request is sent this long after `t = 0` or later; those in flight still finish (each
    /// within the request timeout).
    pub max_duration: Option<Duration>,
    /// The live progress line on stderr (only when it is a terminal).
    pub progress: bool,
    /// Counts the generated text when a server sends no usage.
    pub tokenizer: Option<Arc<TokenCounter>>,
}

impl RunConfig {
    pub fn new(request: RequestConfig) -> Self {
        Self {
            request,
            max_concurrency: None,
            num_warmups: 0,
            max_duration: None,
            progress: false,
            tokenizer: None,
        }
    }
}

impl std::fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("request", &self.request)
            .field("max_concurrency", &self.max_concurrency)
            .field("num_warmups", &self.num_warmups)
            .field("max_duration", &self.max_duration)
            .field("progress", &self.progress)
            .field("tokenizer", &self.tokenizer.is_some())
            .finish()
    }
}

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
    /// How the conversations went, for a conversation run ([`run_conversations`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<ConversationSummary>,
}

/// Sends `specs[i]` at `arrival_times_s[i]` (seconds after `t = 0`, non-decreasing) and returns
/// every request's record.
pub async fn run(
    specs: &[RequestSpec],
    arrival_times_s: &[f64],
    config: &RunConfig,
) -> Result<RunOutcome, RunError> {
    validate(specs, arrival_times_s, config)?;
    if Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread {
        tracing::warn!("the runner is on a current-thread runtime: one core reads every stream");
    }
    let client = Client::new(config.request.clone())?;
    let num_warmup_errors = warm_up(&client, specs, config).await;

    let counters = Arc::new(LiveCounters::default());
    let (records_tx, mut records_rx) = mpsc::unbounded_channel();
    // Dropping this sender (the run abandoned) ends every request task.
    let (_cancel_tx, cancel_rx) = watch::channel(());
    let stop = StopFlag::default();
    let _stop_on_drop = StopOnDrop(stop.clone());
    let clock = RunClock {
        start: Instant::now() + START_DELAY,
    };
    let start_unix_s = unix_now_s() + START_DELAY.as_secs_f64();
    let dispatch = Dispatch {
        clock,
        arrival_times_s: arrival_times_s.to_vec(),
        end: config.max_duration.map(|d| clock.start + d),
        slots: config.max_concurrency.map(|n| Arc::new(Semaphore::new(n))),
        stop,
    };
    let launcher = Launcher {
        client,
        specs: Arc::from(specs),
        clock,
        records_tx,
        counters: Arc::clone(&counters),
        tokenizer: config.tokenizer.clone(),
        cancel: cancel_rx,
        handle: Handle::current(),
    };
    let cpu = CpuMonitor::start();
    let progress = Progress::start(config.progress, specs.len(), Arc::clone(&counters));
    let report = dispatch::spawn(dispatch, move |ticket| launcher.launch(ticket))
        .map_err(RunError::Thread)?;

    let (records, client_lags_s) = collect(&mut records_rx, specs.len()).await;
    let duration_s = clock.now_s();
    let cpu = cpu.and_then(CpuMonitor::stop);
    progress.finish();
    let report = report.await.unwrap_or_default();
    let (target_send_rate, achieved_send_rate) = send_rates(&records);
    Ok(RunOutcome {
        start_unix_s,
        duration_s,
        num_scheduled: specs.len(),
        num_not_sent: specs.len() - report.num_dispatched,
        num_warmups: config.num_warmups,
        num_warmup_errors,
        client: ClientHealth {
            slot_wait_s: LagSummary::of(&report.slot_waits_s),
            dispatcher_lag_s: LagSummary::of(&report.lags_s),
            client_lag_s: LagSummary::of(&client_lags_s),
            peak_in_flight: counters.peak_in_flight(),
            max_concurrency: config.max_concurrency,
            target_send_rate,
            achieved_send_rate,
            cpu,
        },
        records,
        conversations: None,
    })
}

/// Receives records until every sender is gone; returns them by index, with the client lags.
async fn collect(
    records_rx: &mut mpsc::UnboundedReceiver<Finished>,
    capacity: usize,
) -> (Vec<RequestRecord>, Vec<f64>) {
    let mut records = Vec::with_capacity(capacity);
    let mut client_lags_s = Vec::with_capacity(capacity);
    while let Some(finished) = records_rx.recv().await {
        records.push(finished.record);
        client_lags_s.push(finished.client_lag_s);
    }
    records.sort_by_key(|r| r.index);
    (records, client_lags_s)
}

fn validate(specs: &[RequestSpec], arrivals: &[f64], config: &RunConfig) -> Result<(), RunError> {
    if specs.len() != arrivals.len() {
        return Err(RunError::LengthMismatch {
            num_specs: specs.len(),
            num_arrivals: arrivals.len(),
        });
    }
    let mut previous = 0.0;
    for (index, &value) in arrivals.iter().enumerate() {
        if !value.is_finite() || value < previous {
            return Err(RunError::BadSchedule { index, value });
        }
        previous = value;
    }
    if config.max_concurrency == Some(0) {
        return Err(RunError::ZeroConcurrency);
    }
    Ok(())
}

/// Sends the warm-up requests (as many at once as the concurrency limit allows) and waits for
/// them; returns how many failed.
async fn warm_up(client: &Client, specs: &[RequestSpec], config: &RunConfig) -> usize {
    let num_warmups = config.num_warmups;
    if num_warmups == 0 || specs.is_empty() {
        return 0;
    }
    let clock = RunClock {
        start: Instant::now(),
    };
    let concurrency = config
        .max_concurrency
        .unwrap_or(num_warmups)
        .min(num_warmups);
    let tokenizer = config.tokenizer.as_deref();
    let records: Vec<RequestRecord> = futures_util::stream::iter(0..num_warmups)
        .map(|k| client.send(k, &specs[k % specs.len()], 0.0, clock, tokenizer))
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let failed: Vec<&RequestRecord> = records.iter().filter(|r| !r.is_success()).collect();
    if let Some(first) = failed.first() {
        tracing::warn!(
            "{} of {num_warmups} warm-up requests failed; first: {:?} {}",
            failed.len(),
            first.error,
            first.error_message.as_deref().unwrap_or("")
        );
    }
    failed.len()
}

/// A request's record and the client's own lateness sending it.
#[derive(Debug)]
struct Finished {
    record: RequestRecord,
    client_lag_s: f64,
}

/// Spawns one task per request; owned by the dispatcher thread.
struct Launcher {
    client: Client,
    specs: Arc<[RequestSpec]>,
    clock: RunClock,
    records_tx: mpsc::UnboundedSender<Finished>,
    counters: Arc<LiveCounters>,
    tokenizer: Option<Arc<TokenCounter>>,
    cancel: watch::Receiver<()>,
    handle: Handle,
}

impl Launcher {
    fn launch(&self, ticket: Ticket) {
        let client = self.client.clone();
        let specs = Arc::clone(&self.specs);
        let clock = self.clock;
        let records_tx = self.records_tx.clone();
        let counters = Arc::clone(&self.counters);
        let tokenizer = self.tokenizer.clone();
        let mut cancel = self.cancel.clone();
        self.handle.spawn(async move {
            let Ticket {
                index,
                target_send_s,
                ready_s,
                permit,
            } = ticket;
            counters.started();
            let send = client.send(
                index,
                &specs[index],
                target_send_s,
                clock,
                tokenizer.as_deref(),
            );
            let record = tokio::select! {
                record = send => record,
                _ = cancel.changed() => return,
            };
            counters.finished(record.is_success());
            drop(permit);
            let client_lag_s = record.actual_send_s - ready_s;
            let _ = records_tx.send(Finished {
                record,
                client_lag_s,
            });
        });
    }
}

/// Stops the dispatcher when `run` ends or is dropped.
struct StopOnDrop(StopFlag);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

fn unix_now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
