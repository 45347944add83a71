//! What every kind of run holds from `t = 0` until its last record is in: the clock and its
//! wall-clock start, the channel the records come back on, the live counters, the switches that
//! end the run, and what it collects at the end ([`RunEnd`]).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use super::config::{RunConfig, START_DELAY};
use super::cpu::CpuMonitor;
use super::dispatch::{Dispatch, DispatchReport, StopFlag};
use super::outcome::RunEnd;
use crate::client::RunClock;
use crate::progress::{LiveCounters, Progress};
use crate::record::{unix_now_s, RequestRecord};

/// A request's record and the client's own lateness sending it.
#[derive(Debug)]
pub(super) struct Finished {
    pub record: RequestRecord,
    pub client_lag_s: f64,
}

/// The run's clock, counters and record channel; dropping it stops the dispatcher and ends
/// every request task (the run abandoned).
pub(super) struct RunFrame {
    pub clock: RunClock,
    /// Wall-clock time of `t = 0`, seconds since the Unix epoch.
    pub start_unix_s: f64,
    pub counters: Arc<LiveCounters>,
    /// Stops the dispatcher (Ctrl-C, or the frame dropped).
    pub stop: StopFlag,
    records_rx: mpsc::UnboundedReceiver<Finished>,
    _cancel_tx: watch::Sender<()>,
    _stop_on_drop: StopOnDrop,
}

/// What the request tasks hold of the frame. The record channel closes when the last sender
/// (the tasks', and the dispatcher's that spawns them) is gone.
pub(super) struct TaskLinks {
    pub records_tx: mpsc::UnboundedSender<Finished>,
    /// Changes (closes) when the run is abandoned.
    pub cancel_rx: watch::Receiver<()>,
}

/// How many a run scheduled, and so how its unsent ones are counted.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scheduled {
    /// Independent requests: those the dispatcher did not send are unsent.
    Requests(usize),
    /// Conversation turns: those without a record are unsent (a conversation cut short by
    /// `max_duration` sends no later turns, and the dispatcher counts conversations).
    Turns(usize),
}

impl Scheduled {
    fn len(self) -> usize {
        match self {
            Self::Requests(n) | Self::Turns(n) => n,
        }
    }

    fn num_not_sent(self, report: &DispatchReport, num_records: usize) -> usize {
        match self {
            Self::Requests(n) => n - report.num_dispatched,
            Self::Turns(n) => n - num_records,
        }
    }
}

/// The CPU monitor and the progress bar, started just before the dispatcher.
pub(super) struct RunMonitors {
    cpu: Option<CpuMonitor>,
    progress: Progress,
}

impl RunFrame {
    /// A frame whose `t = 0` is [`START_DELAY`] from now, and the links its tasks take.
    pub fn start() -> (Self, TaskLinks) {
        let (records_tx, records_rx) = mpsc::unbounded_channel();
        let (cancel_tx, cancel_rx) = watch::channel(());
        let stop = StopFlag::default();
        let frame = Self {
            clock: RunClock {
                start: Instant::now() + START_DELAY,
            },
            start_unix_s: unix_now_s() + START_DELAY.as_secs_f64(),
            counters: Arc::new(LiveCounters::default()),
            _stop_on_drop: StopOnDrop(stop.clone()),
            stop,
            records_rx,
            _cancel_tx: cancel_tx,
        };
        (
            frame,
            TaskLinks {
                records_tx,
                cancel_rx,
            },
        )
    }

    /// The dispatcher's schedule: `arrival_times_s` on this clock, within the run's
    /// `max_duration` and `max_concurrency`.
    pub fn dispatch(&self, arrival_times_s: &[f64], config: &RunConfig) -> Dispatch {
        Dispatch {
            clock: self.clock,
            arrival_times_s: arrival_times_s.to_vec(),
            end: config.max_duration.map(|d| self.clock.start + d),
            slots: config.max_concurrency.map(|n| Arc::new(Semaphore::new(n))),
            stop: self.stop.clone(),
        }
    }

    /// Starts the CPU monitor and the progress bar over `num_scheduled` requests.
    pub fn monitor(&self, config: &RunConfig, num_scheduled: usize) -> RunMonitors {
        RunMonitors {
            cpu: CpuMonitor::start(),
            progress: Progress::start(config.progress, num_scheduled, Arc::clone(&self.counters)),
        }
    }

    /// Waits for every record, then for the dispatcher's report; `num_warmup_errors` is what
    /// the warm-up left.
    pub async fn finish(
        mut self,
        monitors: RunMonitors,
        report: oneshot::Receiver<DispatchReport>,
        scheduled: Scheduled,
        config: &RunConfig,
        num_warmup_errors: usize,
    ) -> RunEnd {
        let (records, client_lags_s) = collect(&mut self.records_rx, scheduled.len()).await;
        let duration_s = self.clock.now_s();
        let cpu = monitors.cpu.and_then(CpuMonitor::stop);
        monitors.progress.finish();
        let report = report.await.unwrap_or_default();
        RunEnd {
            num_not_sent: scheduled.num_not_sent(&report, records.len()),
            records,
            client_lags_s,
            dispatch: report,
            peak_in_flight: self.counters.peak_in_flight(),
            cpu,
            start_unix_s: self.start_unix_s,
            duration_s,
            num_scheduled: scheduled.len(),
            num_warmups: config.num_warmups,
            num_warmup_errors,
            max_concurrency: config.max_concurrency,
        }
    }
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

/// Stops the dispatcher when the run ends or is dropped.
struct StopOnDrop(StopFlag);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}
