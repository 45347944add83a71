//! A response written as it is generated: chat deltas in, Responses events out (over SSE to the
//! client, or into a background response's event log), the final Response object kept.

use crate::openai::wire::usage::Usage;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, BoxStream, Stream, StreamExt};

use crate::metrics::Metrics;
use crate::openai::chat::StartedChat;
use crate::openai::choices::events::ChoiceEvent;
use crate::openai::choices::run::merged;
use crate::openai::choices::usage::UsageTotals;
use crate::openai::reply::chat_format::ChatFormat;
use crate::openai::reply::format::{ChoiceEnd, ResponseFormat};
use crate::openai::responses::background::{BackgroundRun, BackgroundRuns};
use crate::openai::responses::events::ResponseEvents;
use crate::openai::responses::store::Keeping;
use crate::openai::wire::responses::{ResponseObject, ResponseShell};
use crate::openai::wire::responses_events::ResponseStreamEvent;

/// A streamed response while it is written.
pub struct Streaming {
    events: BoxStream<'static, ChoiceEvent>,
    format: ChatFormat,
    translator: ResponseEvents,
    totals: UsageTotals,
    metrics: Metrics,
    keeping: Option<Keeping>,
    id: String,
    pending: VecDeque<ResponseStreamEvent>,
    done: bool,
    /// The Response object once it ended (completed, incomplete, failed or cancelled).
    final_response: Option<ResponseObject>,
}

impl std::fmt::Debug for Streaming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streaming")
            .field("id", &self.id)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Streaming {
    /// Starts writing `chat` as the response `shell` (its opening events first); a finished
    /// response goes to `keeping`'s store.
    pub fn new(
        chat: StartedChat,
        shell: ResponseShell,
        metrics: Metrics,
        keeping: Option<Keeping>,
    ) -> Self {
        let id = shell.id.clone();
        let mut translator = ResponseEvents::new(shell);
        let pending: VecDeque<ResponseStreamEvent> = translator.opening().into();
        Self {
            events: merged(chat.runs),
            format: chat.format,
            translator,
            totals: chat.totals,
            metrics,
            keeping,
            id,
            pending,
            done: false,
            final_response: None,
        }
    }

    /// The next event to write; `None` once the response has ended and every event is out.
    pub async fn next_event(&mut self) -> Option<ResponseStreamEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            self.advance().await?;
        }
    }

    /// Ends the response as cancelled: the engine's request is dropped (aborted) and the open
    /// item closed; its last events are still to be written. Keeps the cancelled response.
    pub fn cancel(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        self.events = stream::empty().boxed();
        // The engine's count of a dropped request never comes: the tokens streamed so far.
        let usage = self.format.with_details(self.totals.running(0));
        let (events, response) = self.translator.cancel(&usage);
        self.pending.extend(events);
        self.end(response, true);
    }

    /// The chat usage so far, with the format's details (reasoning tokens).
    fn usage(&self) -> Usage {
        self.format.with_details(self.totals.usage())
    }

    /// The response's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The final Response object, once the response has ended.
    pub fn final_response(&self) -> Option<&ResponseObject> {
        self.final_response.as_ref()
    }

    /// Records the final object; keeps it when asked (a finished answer always, a failure or
    /// cancellation for a background response).
    fn end(&mut self, response: ResponseObject, keep: bool) {
        if let Some(keeping) = self.keeping.take().filter(|_| keep) {
            keeping.keep(&self.id, &response);
        }
        self.final_response = Some(response);
    }

    /// Keeps failures too (a background response's state is what clients poll).
    fn keeps_failures(&self) -> bool {
        self.keeping.as_ref().is_some_and(Keeping::is_background)
    }

    /// Reads the next chat event into pending Responses events (`None` once finished).
    async fn advance(&mut self) -> Option<()> {
        if self.done {
            return None;
        }
        let Some(event) = self.events.next().await else {
            self.fail("the engine stopped");
            return Some(());
        };
        match event {
            ChoiceEvent::Delta {
                index, num_tokens, ..
            } => {
                self.totals.note_streamed(index, num_tokens);
                let Some(choice) = event
                    .delta_parts()
                    .and_then(|p| self.format.delta_choice(p, None))
                else {
                    return Some(());
                };
                // The events are read from chat's streamed choice as chat's clients see it.
                let logprobs = choice.logprobs.as_ref().map(|l| l.content.as_slice());
                let events = self
                    .translator
                    .on_delta(&choice.delta, logprobs.unwrap_or_default());
                self.pending.extend(events);
            }
            ChoiceEvent::Finished {
                index,
                finish_reason,
                usage,
                ..
            } => self.finish(index, finish_reason, &usage),
            ChoiceEvent::Error { error, .. } => self.fail(&error.message),
            ChoiceEvent::PromptLogprobs { .. } => {}
        }
        Some(())
    }

    fn fail(&mut self, message: &str) {
        self.done = true;
        let (events, response) = self.translator.fail("server_error", message);
        self.pending.extend(events);
        let keep = self.keeps_failures();
        self.end(response, keep);
    }

    fn finish(&mut self, index: usize, finish_reason: &'static str, usage: &pagoda_engine::Usage) {
        self.done = true;
        self.totals.add(index, usage);
        self.metrics
            .record_max_num_generation_tokens(self.totals.max_choice_completion_tokens());
        // The readers' last text (a tool call the parser held, the reasoning's end).
        let end = ChoiceEnd {
            finish_reason,
            stop_reason: None,
        };
        let last = self.format.final_choice(index, &end);
        self.pending
            .extend(self.translator.on_delta(&last.delta, &[]));
        let reason = last.finish_reason.as_deref().unwrap_or(finish_reason);
        let (events, response) = self.translator.finish(reason, &self.usage());
        self.pending.extend(events);
        self.end(response, true);
    }
}

/// One event as SSE: its `type` names the `event:` line, its JSON is the `data:`.
fn sse_event(event: &ResponseStreamEvent) -> Result<Event, Infallible> {
    let data = serde_json::to_string(event).expect("an event serializes");
    Ok(Event::default().event(event.event_type()).data(data))
}

/// Events as SSE, with keep-alive comments.
pub fn sse_response(
    events: impl Stream<Item = ResponseStreamEvent> + Send + 'static,
    keep_alive: std::time::Duration,
) -> Response {
    Sse::new(events.map(|event| sse_event(&event)))
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}

/// The client's own stream: dropping it (a disconnect) aborts the request.
pub fn stream_response(streaming: Streaming, keep_alive: std::time::Duration) -> Response {
    let events = stream::unfold(streaming, |mut streaming| async move {
        let event = streaming.next_event().await?;
        Some((event, streaming))
    });
    sse_response(events, keep_alive)
}

/// Runs `streaming` to its end on a task of its own, its events into a log of `runs`.
pub fn start_in_background(runs: &Arc<BackgroundRuns>, streaming: Streaming) -> Arc<BackgroundRun> {
    let id = streaming.id().to_string();
    let run = runs.register(&id);
    let runs = Arc::clone(runs);
    let task_run = Arc::clone(&run);
    tokio::spawn(async move {
        drive(streaming, &task_run).await;
        let num_bytes = task_run.finish();
        runs.finished(id, num_bytes);
    });
    run
}

/// Writes the response's events into the log until it ends or is cancelled.
async fn drive(mut streaming: Streaming, run: &BackgroundRun) {
    loop {
        tokio::select! {
            biased;
            () = run.cancel_requested() => streaming.cancel(),
            event = streaming.next_event() => match event {
                Some(event) => run.push(event),
                None => return,
            },
        }
    }
}
