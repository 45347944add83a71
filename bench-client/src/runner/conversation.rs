//! Closed-loop conversations (`--multi-turn`, `--dataset-name conversation`): the context of a
//! chat grows turn by turn, and each turn carries the model's actual replies.
//!
//! - **Starts on the schedule.** Conversation `i` starts at `start_times_s[i]` (the dispatcher
//!   of [`super::run`]: `--request-rate` counts conversations per second; `inf` starts them all
//!   at `t = 0`, as many at once as `--max-concurrency` allows). A concurrency slot is held for
//!   the whole conversation, so `--max-concurrency` counts conversations in flight.
//! - **Turns in a closed loop.** One task per conversation sends turn `t + 1` only after turn `t`
//!   has ended (its `[DONE]`) and the think time has passed since, with the history: every
//!   earlier message and the model's reply to it (the text it streamed), then the new user
//!   message.
//! - **Records.** One per turn, carrying `conversation: (conversation id, turn index)`; ids are
//!   the conversations' start order, turn indices count from 0, record indices number the turns
//!   conversation after conversation. A turn's `target_send_s` is when it became due: the
//!   schedule's start time for the first turn, the previous turn's end plus the think time for
//!   the others; so its send lag is the client's own lateness (the wait for a slot, for a first
//!   turn), never the think time.
//! - **Ends.** A failed turn ends its conversation: its later turns are not sent (they count in
//!   `num_not_sent`). With `--duration`, no conversation starts and no turn is sent at or after
//!   the end; turns in flight finish.
//!
//! When the workload has fewer conversations than start times (a `--duration` at a finite
//! rate), the conversations are cycled, each start a conversation of its own.

mod plan;
#[cfg(test)]
mod recording_server;
mod session;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};

use super::config::{validate, RunConfig};
use super::dispatch::{self, Dispatch, DispatchReport};
use super::frame::{RunFrame, Scheduled};
use super::outcome::{ConversationSummary, RunError, RunExtras, RunOutcome};
use super::warm_up::warm_up;
use crate::client::{Client, ClientError};
use crate::workload::RequestSpec;
use plan::{plans_of, ConversationPlan};
use session::{Conversations, SessionHeader, Tally};

/// What only a conversation run has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConversationConfig {
    /// From a turn's end to the next turn of its conversation (`--think-time`).
    pub think_time: Duration,
    /// `--session-header NAME`: sends `NAME: <session_prefix>-<conversation id>` with every turn.
    pub session_header: Option<String>,
    /// Stable for a seed, e.g. `conv-<seed>`.
    pub session_prefix: String,
}

/// Runs conversation `i` of `turn_specs` (grouped by their `conversation`, cycled) from
/// `start_times_s[i]` (seconds after `t = 0`, non-decreasing); returns every turn's record.
pub async fn run_conversations(
    turn_specs: &[RequestSpec],
    start_times_s: &[f64],
    config: &RunConfig,
    conversation: &ConversationConfig,
) -> Result<RunOutcome, RunError> {
    let plans = plans_of(turn_specs)?;
    let first_turns = first_turns_checked(&plans, start_times_s, config)?;
    let session = session_header(conversation)?;
    let client = Client::new(config.request.clone())?;
    let num_warmup_errors = warm_up(&client, &first_turns, config).await;

    let first_index = first_indices(&plans, start_times_s.len());
    let num_scheduled = *first_index.last().unwrap_or(&0);
    let (frame, links) = RunFrame::start();
    let dispatch = frame.dispatch(start_times_s, config);
    let tally = Arc::new(Tally::default());
    let conversations = Arc::new(Conversations {
        client,
        plans,
        first_index,
        clock: frame.clock,
        end: dispatch.end,
        think_time: conversation.think_time,
        session,
        records_tx: links.records_tx,
        counters: Arc::clone(&frame.counters),
        tokenizer: config.tokenizer.clone(),
        tally: Arc::clone(&tally),
    });
    let monitors = frame.monitor(config, num_scheduled);
    let report = start_conversations(dispatch, conversations, links.cancel_rx)?;

    let scheduled = Scheduled::Turns(num_scheduled);
    let end = frame
        .finish(monitors, report, scheduled, config, num_warmup_errors)
        .await;
    let summary = summarize(&tally, start_times_s.len(), conversation);
    let extras = RunExtras {
        // Ctrl-C ends a conversation run at once (its turns would go on after a stop).
        interrupted: false,
        conversations: Some(summary),
        probes: None,
    };
    Ok(RunOutcome::of_run(end, extras))
}

/// Starts the dispatcher: at each start time, one task runs a conversation (until the run is
/// cancelled). The dispatcher and the tasks hold the only record senders, so the records'
/// channel closes when the last of them ends.
fn start_conversations(
    dispatch: Dispatch,
    conversations: Arc<Conversations>,
    cancel: watch::Receiver<()>,
) -> Result<oneshot::Receiver<DispatchReport>, RunError> {
    let handle = Handle::current();
    dispatch::spawn(dispatch, move |ticket| {
        let conversations = Arc::clone(&conversations);
        let mut cancel = cancel.clone();
        handle.spawn(async move {
            tokio::select! {
                () = conversations.converse(ticket) => {}
                _ = cancel.changed() => {}
            }
        });
    })
    .map_err(RunError::Thread)
}

/// Each conversation's first turn, after checking that the conversations, cycled over the
/// start times, make a schedule the runner can keep.
fn first_turns_checked(
    plans: &[ConversationPlan],
    start_times_s: &[f64],
    config: &RunConfig,
) -> Result<Vec<RequestSpec>, RunError> {
    if plans.is_empty() && !start_times_s.is_empty() {
        return Err(RunError::BadConversation(
            "the workload has no conversation".into(),
        ));
    }
    let first_turns: Vec<RequestSpec> = plans
        .iter()
        .map(|plan| plan::History::default().request(&plan.turns[0], (0, 0)))
        .collect();
    let cycled = |i: usize| &first_turns[i % first_turns.len().max(1)];
    let starts: Vec<RequestSpec> = (0..start_times_s.len())
        .map(|i| cycled(i).clone())
        .collect();
    validate(&starts, start_times_s, config)?;
    Ok(first_turns)
}

/// Record index of each started conversation's first turn, then the total number of turns.
fn first_indices(plans: &[ConversationPlan], num_conversations: usize) -> Vec<usize> {
    let mut first = Vec::with_capacity(num_conversations + 1);
    let mut next = 0;
    for i in 0..num_conversations {
        first.push(next);
        next += plans[i % plans.len()].turns.len();
    }
    first.push(next);
    first
}

/// The session header's name, checked once.
fn session_header(config: &ConversationConfig) -> Result<Option<SessionHeader>, RunError> {
    let Some(name) = &config.session_header else {
        return Ok(None);
    };
    let invalid = |reason: String| ClientError::InvalidHeader {
        name: name.clone(),
        reason,
    };
    let header_name =
        HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(e.to_string()))?;
    HeaderValue::from_str(&config.session_prefix).map_err(|e| invalid(e.to_string()))?;
    Ok(Some(SessionHeader {
        name: header_name,
        prefix: config.session_prefix.clone(),
    }))
}

fn summarize(
    tally: &Tally,
    num_conversations: usize,
    config: &ConversationConfig,
) -> ConversationSummary {
    let get = |counter: &std::sync::atomic::AtomicUsize| counter.load(Ordering::Relaxed);
    let num_started = get(&tally.num_started);
    let num_turns_sent = get(&tally.num_turns_sent);
    ConversationSummary {
        num_conversations,
        num_started,
        num_completed: get(&tally.num_completed),
        num_failed: get(&tally.num_failed),
        num_cut_short: get(&tally.num_cut_short),
        num_turns_sent,
        mean_turns: if num_started == 0 {
            0.0
        } else {
            num_turns_sent as f64 / num_started as f64
        },
        think_time_ms: config.think_time.as_secs_f64() * 1e3,
        session_header: config.session_header.clone(),
    }
}
