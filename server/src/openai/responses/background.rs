//! Background responses (`background: true`): the response runs on its own task, whatever
//! happens to the connection that asked for it. Its events go into a log that
//! `GET /v1/responses/{id}?stream=true&starting_after=N` follows from any point; clients poll its
//! state with `GET`, and `POST /v1/responses/{id}/cancel` stops it.
//!
//! A running response's log is always kept; finished logs are kept newest first within a
//! count and a byte budget, after which a response can still be read whole but not streamed
//! again.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::stream::{self, Stream};
use tokio::sync::{watch, Notify};

use crate::openai::wire::responses_events::ResponseStreamEvent;

/// How many finished responses' event logs are kept (the oldest go first).
pub const MAX_FINISHED_LOGS: usize = 1024;
/// How many bytes of events the finished logs may hold in all.
pub const MAX_FINISHED_LOG_BYTES: usize = 64 << 20;

#[derive(Debug, Default)]
struct EventLog {
    events: Vec<ResponseStreamEvent>,
    num_bytes: usize,
    finished: bool,
}

/// One background response's events and its cancel signal.
#[derive(Debug)]
pub struct BackgroundRun {
    log: Mutex<EventLog>,
    /// Bumped on every event and at the end, to wake followers.
    changed: watch::Sender<u64>,
    cancel: Notify,
}

impl BackgroundRun {
    fn new() -> Self {
        Self {
            log: Mutex::new(EventLog::default()),
            changed: watch::Sender::new(0),
            cancel: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, EventLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn push(&self, event: ResponseStreamEvent) {
        let num_bytes = serde_json::to_vec(&event).map_or(0, |json| json.len());
        let mut log = self.lock();
        log.num_bytes += num_bytes;
        log.events.push(event);
        drop(log);
        self.changed.send_modify(|version| *version += 1);
    }

    /// Marks the log complete (followers end after its last event); its size in bytes.
    pub fn finish(&self) -> usize {
        let mut log = self.lock();
        log.finished = true;
        let num_bytes = log.num_bytes;
        drop(log);
        self.changed.send_modify(|version| *version += 1);
        num_bytes
    }

    pub fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// How many events the log holds, once the run has ended (`None` while it runs).
    pub fn num_events_if_finished(&self) -> Option<usize> {
        let log = self.lock();
        log.finished.then_some(log.events.len())
    }

    /// Asks the run to stop (it keeps the response as `cancelled`; a finished run ignores it)
    /// and waits until it has ended.
    pub async fn cancel(&self) {
        self.cancel.notify_one();
        self.wait_finished().await;
    }

    /// Resolves when a cancel is asked (one asked before counts).
    pub async fn cancel_requested(&self) {
        self.cancel.notified().await;
    }

    /// Waits until the run has ended and its last event is in the log.
    pub async fn wait_finished(&self) {
        let mut receiver = self.changed.subscribe();
        loop {
            receiver.borrow_and_update();
            if self.is_finished() {
                return;
            }
            if receiver.changed().await.is_err() {
                return;
            }
        }
    }

    /// The events after sequence number `starting_after` (all of them for `None`), then each
    /// new one as it comes, until the run's last.
    pub fn follow(
        self: Arc<Self>,
        starting_after: Option<u64>,
    ) -> impl Stream<Item = ResponseStreamEvent> {
        let next = starting_after.map_or(0, |n| {
            usize::try_from(n).unwrap_or(usize::MAX).saturating_add(1)
        });
        let receiver = self.changed.subscribe();
        stream::unfold(
            (self, next, receiver),
            |(run, next, mut receiver)| async move {
                loop {
                    receiver.borrow_and_update();
                    {
                        let log = run.lock();
                        if let Some(event) = log.events.get(next) {
                            let event = event.clone();
                            drop(log);
                            return Some((event, (run, next + 1, receiver)));
                        }
                        if log.finished {
                            return None;
                        }
                    }
                    receiver.changed().await.ok()?;
                }
            },
        )
    }
}

#[derive(Debug, Default)]
struct Runs {
    by_id: HashMap<String, Arc<BackgroundRun>>,
    /// Finished runs' ids and log sizes, oldest first.
    finished: VecDeque<(String, usize)>,
    finished_bytes: usize,
}

/// The background responses whose event logs are kept, by response id.
#[derive(Debug)]
pub struct BackgroundRuns {
    max_finished: usize,
    max_finished_bytes: usize,
    runs: Mutex<Runs>,
}

impl Default for BackgroundRuns {
    fn default() -> Self {
        Self::new(MAX_FINISHED_LOGS, MAX_FINISHED_LOG_BYTES)
    }
}

impl BackgroundRuns {
    pub fn new(max_finished: usize, max_finished_bytes: usize) -> Self {
        Self {
            max_finished,
            max_finished_bytes,
            runs: Mutex::new(Runs::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Runs> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new run's log under `id` (the caller writes it, then calls [`Self::finished`]).
    pub fn register(&self, id: &str) -> Arc<BackgroundRun> {
        let run = Arc::new(BackgroundRun::new());
        self.lock().by_id.insert(id.to_string(), Arc::clone(&run));
        run
    }

    pub fn get(&self, id: &str) -> Option<Arc<BackgroundRun>> {
        self.lock().by_id.get(id).cloned()
    }

    /// Drops a run's log (a deleted response); a running one is not stopped by this.
    pub fn forget(&self, id: &str) {
        let mut runs = self.lock();
        runs.by_id.remove(id);
        if let Some(place) = runs.finished.iter().position(|(kept, _)| kept == id) {
            if let Some((_, num_bytes)) = runs.finished.remove(place) {
                runs.finished_bytes -= num_bytes;
            }
        }
    }

    /// Marks `id`'s log finished with `num_bytes` ([`BackgroundRun::finish`]'s), dropping the
    /// oldest finished logs past the budget.
    pub fn finished(&self, id: String, num_bytes: usize) {
        let mut runs = self.lock();
        if !runs.by_id.contains_key(&id) {
            return;
        }
        runs.finished.push_back((id, num_bytes));
        runs.finished_bytes += num_bytes;
        while runs.finished.len() > self.max_finished
            || runs.finished_bytes > self.max_finished_bytes
        {
            let Some((oldest, freed)) = runs.finished.pop_front() else {
                break;
            };
            runs.finished_bytes -= freed;
            runs.by_id.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests;
