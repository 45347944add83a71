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

mod config;
mod conversation;
mod cpu;
mod dispatch;
mod frame;
mod health;
mod interrupt;
mod lag;
mod outcome;
mod probes;
#[cfg(test)]
pub(crate) mod test_server;
#[cfg(test)]
mod tests;
mod warm_up;

use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{mpsc, watch};

pub use config::RunConfig;
pub use conversation::{run_conversations, ConversationConfig};
pub use cpu::{CpuMonitor, CpuUsage};
pub use health::ClientHealth;
pub use lag::LagSummary;
pub use outcome::{ConversationSummary, RunError, RunOutcome};
pub use probes::ProbeSummary;

use crate::client::{Client, RunClock, TokenCounter};
use crate::progress::LiveCounters;
use crate::workload::RequestSpec;
use config::validate;
use dispatch::Ticket;
use frame::{Finished, RunFrame, Scheduled};
use interrupt::InterruptWatch;
use outcome::RunExtras;
use warm_up::warm_up;

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

    let (frame, links) = RunFrame::start();
    let interrupt = InterruptWatch::start(frame.stop.clone());
    let dispatch = frame.dispatch(arrival_times_s, config);
    let launcher = Launcher {
        client,
        specs: Arc::from(specs),
        clock: frame.clock,
        records_tx: links.records_tx,
        counters: Arc::clone(&frame.counters),
        tokenizer: config.tokenizer.clone(),
        cancel: links.cancel_rx,
        handle: Handle::current(),
    };
    // Dropping the sender ends the probes (when the workload's records are in).
    let (probes_stop, probes_stopped) = watch::channel(());
    let probes = match config.probe_rate_per_s {
        Some(rate) => {
            let probe_client = probes::probe_client(&config.request)?;
            let sending = probes::send_probes(probe_client, frame.clock, rate, probes_stopped);
            Some((rate, tokio::spawn(sending)))
        }
        None => None,
    };
    let monitors = frame.monitor(config, specs.len());
    let report = dispatch::spawn(dispatch, move |ticket| launcher.launch(ticket))
        .map_err(RunError::Thread)?;

    let scheduled = Scheduled::Requests(specs.len());
    let end = frame
        .finish(monitors, report, scheduled, config, num_warmup_errors)
        .await;
    drop(probes_stop);
    let probes = match probes {
        Some((rate, sending)) => Some(ProbeSummary::of(rate, &sending.await.unwrap_or_default())),
        None => None,
    };
    let extras = RunExtras {
        interrupted: interrupt.finish(),
        conversations: None,
        probes,
    };
    Ok(RunOutcome::of_run(end, extras))
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
