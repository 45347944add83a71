//! One conversation, as one task: its turns in order, each sent when the previous one has ended
//! and the think time has passed, with the history of the model's actual replies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;

use super::super::dispatch::Ticket;
use super::super::frame::Finished;
use super::plan::{ConversationPlan, History};
use crate::client::{Client, RunClock, TokenCounter};
use crate::progress::LiveCounters;
use crate::record::TokenCountSource;

/// How the conversations of a run ended, counted as they end.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub num_started: AtomicUsize,
    /// Every turn sent and successful.
    pub num_completed: AtomicUsize,
    /// Ended by a failed turn.
    pub num_failed: AtomicUsize,
    /// A turn fell due at or after the run's end (`--duration`).
    pub num_cut_short: AtomicUsize,
    pub num_turns_sent: AtomicUsize,
}

/// `NAME: <prefix>-<conversation id>` on every turn.
#[derive(Debug, Clone)]
pub(super) struct SessionHeader {
    pub name: HeaderName,
    pub prefix: String,
}

/// What every conversation task of a run shares.
pub(super) struct Conversations {
    pub client: Client,
    pub plans: Vec<ConversationPlan>,
    /// Record index of conversation `i`'s first turn: its turns are numbered from there.
    pub first_index: Vec<usize>,
    pub clock: RunClock,
    /// No turn falls due at or after this time.
    pub end: Option<Instant>,
    pub think_time: Duration,
    pub session: Option<SessionHeader>,
    pub records_tx: mpsc::UnboundedSender<Finished>,
    pub counters: Arc<LiveCounters>,
    pub tokenizer: Option<Arc<TokenCounter>>,
    pub tally: Arc<Tally>,
}

/// A turn's end: when the next is due, or why there is none.
enum Next {
    DueAt(f64),
    Failed,
}

impl Conversations {
    /// Runs conversation `ticket.index` (the plans cycled) to its end; the ticket's concurrency
    /// slot is held throughout.
    pub async fn converse(&self, ticket: Ticket) {
        let Ticket {
            index: id,
            target_send_s,
            ready_s,
            permit,
        } = ticket;
        let plan = &self.plans[id % self.plans.len()];
        self.tally.num_started.fetch_add(1, Ordering::Relaxed);
        let headers = self.headers(id);
        let mut history = History::default();
        // The first turn is due on the schedule; each later one when it became due.
        let (mut target_s, mut ready_s) = (target_send_s, ready_s);
        for (turn_index, turn) in plan.turns.iter().enumerate() {
            if turn_index > 0 && !self.wait_until(ready_s).await {
                self.tally.num_cut_short.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let spec = history.request(turn, (id, turn_index));
            self.counters.started();
            let index = self.first_index[id] + turn_index;
            let tokenizer = self.tokenizer.as_deref();
            let sent = self.client.send_turn(
                index,
                &spec,
                target_s,
                self.clock,
                tokenizer,
                headers.clone(),
            );
            let (mut record, reply) = sent.await;
            self.tally.num_turns_sent.fetch_add(1, Ordering::Relaxed);
            record.conversation = Some((id, turn_index));
            if let (TokenCountSource::Tokenizer, Some(count)) =
                (record.token_count_source, tokenizer)
            {
                // No usage: the prompt actually sent, counted off the timed path.
                record.input_tokens = count(&spec.prompt.as_text());
            }
            self.counters.finished(record.is_success());
            let next = if record.is_success() {
                history.push(turn, reply, record.output_tokens);
                Next::DueAt(record.end_s + self.think_time.as_secs_f64())
            } else {
                Next::Failed
            };
            let client_lag_s = record.actual_send_s - ready_s;
            let _ = self.records_tx.send(Finished {
                record,
                client_lag_s,
            });
            match next {
                Next::DueAt(due_s) => (target_s, ready_s) = (due_s, due_s),
                Next::Failed => {
                    self.tally.num_failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
        self.tally.num_completed.fetch_add(1, Ordering::Relaxed);
        drop(permit);
    }

    /// Sleeps until `due_s` on the run's clock; `false` (at once) when that is at or past the
    /// run's end.
    async fn wait_until(&self, due_s: f64) -> bool {
        let due = self.clock.start + Duration::from_secs_f64(due_s.max(0.0));
        if self.end.is_some_and(|end| due >= end) {
            return false;
        }
        tokio::time::sleep_until(due.into()).await;
        true
    }

    /// The session header of conversation `id`, when the run sends one.
    fn headers(&self, id: usize) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(session) = &self.session {
            let value = format!("{}-{id}", session.prefix);
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(session.name.clone(), value);
            }
        }
        headers
    }
}
