//! The dispatcher: one OS thread that sleeps until each request's due time on the absolute
//! schedule and hands the request to the tokio runtime.
//!
//! Why a thread and not a tokio task: tokio's timer has a 1 ms resolution (a sleep ends on the
//! next millisecond tick at best), which alone would put the p99 send lag near 1 ms. The thread
//! also keeps the schedule while the runtime's workers are busy reading thousands of streams. It
//! never sleeps a relative interval between requests: each wait is computed from
//! `start + arrival_time`, so lateness never accumulates into drift.
//!
//! Why it spins the last stretch: a sleeping thread is woken late now and then — on the 2-vCPU
//! VM this was written on, a bare `sleep` loop at 5 ms intervals woke 0.12 ms late at the median
//! but 1.5–1.75 ms late at p99 (an idle virtual CPU is slow to wake). Sleeping until shortly
//! before the due time and spinning the rest brought p99 to under 0.01 ms. The spin is at most
//! `MAX_SPIN` and at most a fifth of each wait, so it never costs more than a fifth of one core.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::client::RunClock;

/// The longest single sleep, so that a cancelled run stops its dispatcher promptly.
const MAX_NAP: Duration = Duration::from_millis(20);
/// The longest busy wait before a due time.
const MAX_SPIN: Duration = Duration::from_millis(1);
/// The busy wait is at most this fraction (1/n) of the whole wait.
const SPIN_FRACTION: u32 = 5;

/// Set when the run is over or abandoned; the dispatcher stops at its next look.
#[derive(Debug, Clone, Default)]
pub(super) struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What the dispatcher needs.
#[derive(Debug)]
pub(super) struct Dispatch {
    pub clock: RunClock,
    /// Seconds after `clock.start`, non-decreasing.
    pub arrival_times_s: Vec<f64>,
    /// No request is sent at or after this time (the run's duration limit).
    pub end: Option<Instant>,
    /// One permit per request in flight, when concurrency is limited.
    pub slots: Option<Arc<Semaphore>>,
    pub stop: StopFlag,
}

/// One request handed to the runtime.
#[derive(Debug)]
pub(super) struct Ticket {
    pub index: usize,
    /// When the schedule said to send it.
    pub target_send_s: f64,
    /// When it was free to go: its due time, or later when it waited for a concurrency slot.
    /// The client's own lateness is measured from here.
    pub ready_s: f64,
    /// Held until the request ends.
    pub permit: Option<OwnedSemaphorePermit>,
}

/// The dispatcher's account of itself.
#[derive(Debug, Default)]
pub(super) struct DispatchReport {
    pub num_dispatched: usize,
    /// Per request: about to be handed to the runtime − ready (timer overshoot, the thread's
    /// own work, and its waits for the CPU).
    pub lags_s: Vec<f64>,
    /// Per request: ready − due (the wait for a concurrency slot; 0 without a limit).
    pub slot_waits_s: Vec<f64>,
}

/// Starts the dispatcher thread; `launch` is called with each request at its time (it must be
/// cheap: spawn a task and return). The report arrives when the schedule is done or stopped.
pub(super) fn spawn(
    dispatch: Dispatch,
    launch: impl FnMut(Ticket) + Send + 'static,
) -> std::io::Result<oneshot::Receiver<DispatchReport>> {
    let handle = Handle::current();
    let (report_tx, report_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("pagoda-bench-dispatch".into())
        .spawn(move || {
            let report = dispatch.run(&handle, launch);
            let _ = report_tx.send(report);
        })?;
    Ok(report_rx)
}

impl Dispatch {
    fn run(self, handle: &Handle, mut launch: impl FnMut(Ticket)) -> DispatchReport {
        let mut report = DispatchReport::default();
        // When the last wait for a slot ended: requests due before it were held back until then.
        let mut slot_freed = self.clock.start;
        for (index, &arrival_s) in self.arrival_times_s.iter().enumerate() {
            let due = self.clock.start + Duration::from_secs_f64(arrival_s);
            if self.end.is_some_and(|end| due >= end) || !self.sleep_until(due) {
                break;
            }
            let permit = match self.take_slot(handle) {
                Slot::Free(permit) => permit,
                Slot::Waited(permit) => {
                    slot_freed = Instant::now();
                    Some(permit)
                }
                Slot::GiveUp => break,
            };
            let ready = due.max(slot_freed);
            let handed = Instant::now();
            launch(Ticket {
                index,
                target_send_s: arrival_s,
                ready_s: self.clock.secs(ready),
                permit,
            });
            report.num_dispatched += 1;
            report.lags_s.push((handed - ready).as_secs_f64());
            report.slot_waits_s.push((ready - due).as_secs_f64());
        }
        report
    }

    /// Waits until `due`: sleeps, then spins the last stretch; `false` when stopped first.
    fn sleep_until(&self, due: Instant) -> bool {
        let spin = due
            .saturating_duration_since(Instant::now())
            .checked_div(SPIN_FRACTION)
            .unwrap_or_default()
            .min(MAX_SPIN);
        let wake = due - spin;
        loop {
            if self.stop.is_stopped() {
                return false;
            }
            let now = Instant::now();
            if now >= wake {
                break;
            }
            std::thread::sleep((wake - now).min(MAX_NAP));
        }
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        true
    }

    /// A concurrency slot: at once, after a wait, or none (stopped or past the end).
    fn take_slot(&self, handle: &Handle) -> Slot {
        let Some(slots) = &self.slots else {
            return Slot::Free(None);
        };
        match Arc::clone(slots).try_acquire_owned() {
            Ok(permit) => return Slot::Free(Some(permit)),
            Err(TryAcquireError::Closed) => return Slot::GiveUp,
            Err(TryAcquireError::NoPermits) => {}
        }
        let wait = async {
            loop {
                let deadline = Instant::now() + MAX_NAP;
                let deadline = self.end.map_or(deadline, |end| end.min(deadline));
                let acquire = Arc::clone(slots).acquire_owned();
                match tokio::time::timeout_at(deadline.into(), acquire).await {
                    Ok(Ok(permit)) => return Slot::Waited(permit),
                    Ok(Err(_closed)) => return Slot::GiveUp,
                    Err(_elapsed) => {}
                }
                let past_end = self.end.is_some_and(|end| Instant::now() >= end);
                if past_end || self.stop.is_stopped() {
                    return Slot::GiveUp;
                }
            }
        };
        handle.block_on(wait)
    }
}

enum Slot {
    Free(Option<OwnedSemaphorePermit>),
    Waited(OwnedSemaphorePermit),
    GiveUp,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Runs a dispatch with `launch` recording the time of each call.
    async fn launch_times(
        arrival_times_s: Vec<f64>,
        slots: Option<Arc<Semaphore>>,
        hold: Duration,
    ) -> (Vec<(Ticket, Instant)>, DispatchReport, RunClock) {
        let clock = RunClock {
            start: Instant::now() + Duration::from_millis(20),
        };
        let launched = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&launched);
        let handle = Handle::current();
        let dispatch = Dispatch {
            clock,
            arrival_times_s,
            end: None,
            slots,
            stop: StopFlag::default(),
        };
        let report = spawn(dispatch, move |mut ticket: Ticket| {
            // Release the slot after `hold`, as a request would when it ends.
            let permit = ticket.permit.take();
            handle.spawn(async move {
                tokio::time::sleep(hold).await;
                drop(permit);
            });
            sink.lock().expect("lock").push((ticket, Instant::now()));
        })
        .expect("thread starts")
        .await
        .expect("a report");
        let launched = std::mem::take(&mut *launched.lock().expect("lock"));
        (launched, report, clock)
    }

    /// Runs a 1 kHz schedule whose launch of request `STALLED` blocks the dispatcher for
    /// `STALL`, as a descheduled thread would; returns each request's lag behind its due time.
    async fn lags_around_a_stall() -> Vec<f64> {
        const STALLED: usize = 20;
        let clock = RunClock {
            start: Instant::now() + Duration::from_millis(20),
        };
        let num_requests = 600;
        let dispatch = Dispatch {
            clock,
            arrival_times_s: (0..num_requests).map(|i| i as f64 / 1000.0).collect(),
            end: None,
            slots: None,
            stop: StopFlag::default(),
        };
        let launched = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&launched);
        let report = spawn(dispatch, move |ticket: Ticket| {
            let at = Instant::now();
            if ticket.index == STALLED {
                std::thread::sleep(STALL);
            }
            sink.lock().expect("lock").push((ticket, at));
        })
        .expect("thread starts")
        .await
        .expect("a report");
        assert_eq!(report.num_dispatched, num_requests);
        let launched = std::mem::take(&mut *launched.lock().expect("lock"));
        let order: Vec<usize> = launched.iter().map(|(ticket, _)| ticket.index).collect();
        assert_eq!(order, (0..num_requests).collect::<Vec<_>>());
        launched
            .iter()
            .map(|(ticket, at)| clock.secs(*at) - ticket.target_send_s)
            .collect()
    }

    const STALL: Duration = Duration::from_millis(300);

    /// Lateness does not carry over: after a stall the dispatcher sends what fell due at once and
    /// then keeps the original schedule. A dispatcher sleeping relative gaps would send every later
    /// request at least the whole stall late. The bounds come from the stall's length, not from
    /// this machine's speed (the sub-millisecond lag target is `bench/client_capacity.sh`'s).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn follows_the_absolute_schedule_without_drift() {
        let _serial = super::super::test_server::SERIAL.lock().await;
        let lags = lags_around_a_stall().await;
        assert!(lags.iter().all(|&lag| lag >= 0.0), "never early");
        let stall_s = STALL.as_secs_f64();
        // Request 21 was due 1 ms after the stall began: it waited out the rest of it.
        assert!(lags[21] >= stall_s - 0.002, "{:.6}", lags[21]);
        // Requests due after the stall ended are not carried late by it.
        let last = lags[lags.len() - 1];
        assert!(last < stall_s / 2.0, "last request {last:.6} s late");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_concurrency_limit_holds_requests_back_in_order() {
        let _serial = super::super::test_server::SERIAL.lock().await;
        // Everything due at 0, 2 slots, each held 30 ms: pairs go out 30 ms apart.
        let slots = Arc::new(Semaphore::new(2));
        let (launched, report, clock) =
            launch_times(vec![0.0; 6], Some(slots), Duration::from_millis(30)).await;
        let order: Vec<usize> = launched.iter().map(|(t, _)| t.index).collect();
        assert_eq!(order, [0, 1, 2, 3, 4, 5]);
        let waits = &report.slot_waits_s;
        assert!(waits[0] < 0.005 && waits[1] < 0.005, "{waits:?}");
        assert!(waits[2] >= 0.029 && waits[4] >= 0.059, "{waits:?}");
        for (ticket, at) in &launched {
            assert!(clock.secs(*at) >= ticket.ready_s);
            assert_eq!(ticket.target_send_s, 0.0);
        }
    }
}
