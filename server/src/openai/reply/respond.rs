//! Choices → an HTTP response: one JSON object, or Server-Sent Events (`data: {json}` chunks, a
//! usage chunk when asked, then `data: [DONE]`, with keep-alive comments while idle).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, BoxStream, StreamExt};
use futures_util::FutureExt;
use serde::Serialize;

use crate::metrics::Metrics;
use crate::openai::choices::events::ChoiceEvent;
use crate::openai::choices::run::ChoiceRun;
use crate::openai::choices::usage::UsageTotals;
use crate::openai::error::ApiError;
use crate::openai::reply::format::{ChoiceEnd, ResponseFormat};
use crate::openai::request::plan::RequestPlan;
use crate::openai::wire::usage::Usage;
use crate::openai::wire::Nullable;
use crate::state::AppState;
use crate::timeline::{RequestTrace, WriteKind};

use crate::openai::choices::run::merged;
use crate::openai::reply::collect::collect;

/// Events as a stream writes them: alone, or a choice's last delta with its `Finished` when that
/// is already there (the engine sends a sequence's last token and its end in the same step), so
/// that both can go out in one chunk.
enum Written {
    One(ChoiceEvent),
    Last(ChoiceEvent, ChoiceEvent),
}

fn coalesced(events: BoxStream<'static, ChoiceEvent>) -> BoxStream<'static, Written> {
    let state = (events, None::<ChoiceEvent>);
    stream::unfold(state, |(mut events, held)| async move {
        let event = match held {
            Some(event) => event,
            None => events.next().await?,
        };
        let ChoiceEvent::Delta { index, is_last, .. } = &event else {
            return Some((Written::One(event), (events, None)));
        };
        let index = *index;
        // The last delta waits for its `Finished`, which the engine sends right after it (with
        // several choices another's event may come first: then each goes out alone); any other
        // delta takes only what is ready now, and is never held back.
        let next = match is_last {
            true => events.next().await,
            false => events.next().now_or_never().flatten(),
        };
        match next {
            Some(next @ ChoiceEvent::Finished { index: i, .. }) if i == index => {
                Some((Written::Last(event, next), (events, None)))
            }
            next => Some((Written::One(event), (events, next))),
        }
    })
    .boxed()
}

/// The response a request asked for: streamed (`stream: true`) or whole; `trace` records its
/// timeline (`--request-timeline`).
pub async fn respond<F: ResponseFormat>(
    runs: Vec<ChoiceRun>,
    format: F,
    totals: UsageTotals,
    plan: &RequestPlan,
    state: &AppState,
    trace: Option<RequestTrace>,
) -> Result<Response, ApiError> {
    let metrics = state.metrics.for_model(&plan.reply.model);
    if plan.reply.stream {
        let stream = SseStream {
            include_usage: plan.reply.include_usage,
            continuous_usage: plan.reply.continuous_usage_stats,
            keep_alive: state.sse_keep_alive,
            metrics,
            trace: trace.map(|t| Arc::new(Mutex::new(t))),
        };
        Ok(stream_sse(runs, format, totals, stream))
    } else {
        let mut trace = trace;
        let response = collect(runs, format, totals, &metrics, trace.as_mut()).await;
        if let Some(trace) = trace.as_mut() {
            trace.on_write(WriteKind::Response);
        }
        response
    }
}

fn data<T: Serialize>(value: &T) -> Result<Event, Infallible> {
    let text = serde_json::to_string(value).expect("a typed body serializes");
    Ok(Event::default().data(text))
}

/// How a stream is written: the usage chunk, keep-alive comments, the metrics it records into
/// (labelled with the request's model), and the request's timeline when one is kept.
#[derive(Debug, Clone)]
pub struct SseStream {
    pub include_usage: bool,
    /// vLLM's `continuous_usage_stats`: each chunk carries its choice's usage so far.
    pub continuous_usage: bool,
    pub keep_alive: std::time::Duration,
    pub metrics: Metrics,
    pub trace: Option<SharedTrace>,
}

/// The `usage` field a streamed choice's chunk carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkUsage {
    /// No `usage` field (`include_usage` not asked for).
    Absent,
    /// `"usage": null`, the totals coming in a last chunk of their own (OpenAI's).
    Null,
    /// The choice's usage so far (vLLM's `continuous_usage_stats`), besides the last chunk.
    Running,
}

impl ChunkUsage {
    fn of(include_usage: bool, continuous: bool) -> Self {
        match (include_usage, continuous) {
            (false, _) => ChunkUsage::Absent,
            (true, false) => ChunkUsage::Null,
            (true, true) => ChunkUsage::Running,
        }
    }

    fn field(self, totals: &Mutex<UsageTotals>, choice_index: usize) -> Nullable<Usage> {
        match self {
            ChunkUsage::Absent => None,
            ChunkUsage::Null => Some(None),
            ChunkUsage::Running => totals.lock().ok().map(|t| Some(t.running(choice_index))),
        }
    }
}

/// A request's timeline, shared by the stream's stages.
pub type SharedTrace = Arc<Mutex<RequestTrace>>;

/// An event to write and what it carries.
type Tagged = (Result<Event, Infallible>, WriteKind);

/// Streams the choices as Server-Sent Events.
pub fn stream_sse<F: ResponseFormat>(
    runs: Vec<ChoiceRun>,
    format: F,
    totals: UsageTotals,
    stream: SseStream,
) -> Response {
    let SseStream {
        include_usage,
        continuous_usage,
        keep_alive,
        metrics,
        trace,
    } = stream;
    let format = Arc::new(format);
    let usage = ChunkUsage::of(include_usage, continuous_usage);
    let totals = Arc::new(Mutex::new(totals));
    let openings: Vec<Tagged> = runs
        .iter()
        .filter_map(|run| {
            let index = run.index();
            let prompt_token_ids = run.prompt_token_ids();
            let usage = usage.field(&totals, index);
            let chunk = format.opening_chunk(index, prompt_token_ids.as_deref(), usage)?;
            Some((data(&chunk), WriteKind::Opening))
        })
        .collect();
    let body = {
        let format = Arc::clone(&format);
        let totals = Arc::clone(&totals);
        let trace = trace.clone();
        coalesced(merged(runs)).flat_map(move |written| {
            let chunks = match written {
                Written::One(event) => {
                    note_finished(trace.as_ref(), &event);
                    chunk_of(format.as_ref(), &totals, event, usage)
                        .into_iter()
                        .collect()
                }
                Written::Last(delta, finished) => {
                    note_finished(trace.as_ref(), &finished);
                    last_chunks(format.as_ref(), &totals, delta, finished, usage)
                }
            };
            stream::iter(chunks)
        })
    };
    let ending = stream::once(async move {
        let mut tail: Vec<Tagged> = Vec::new();
        if let Ok(totals) = totals.lock() {
            metrics.record_max_num_generation_tokens(totals.max_choice_completion_tokens());
            if include_usage {
                let chunk = format.chunk(Vec::new(), Some(Some(totals.usage())));
                tail.push((data(&chunk), WriteKind::Usage));
            }
        }
        tail.push((Ok(Event::default().data("[DONE]")), WriteKind::Done));
        stream::iter(tail)
    })
    .flatten();
    let events = stream::iter(openings)
        .chain(body)
        .chain(ending)
        .map(move |(event, kind)| {
            if let Some(trace) = &trace {
                if let Ok(mut trace) = trace.lock() {
                    trace.on_write(kind);
                }
            }
            event
        });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}

/// A finished choice's engine times and tokens go into the request's timeline.
fn note_finished(trace: Option<&SharedTrace>, event: &ChoiceEvent) {
    if let (Some(trace), ChoiceEvent::Finished { usage, timings, .. }) = (trace, event) {
        if let Ok(mut trace) = trace.lock() {
            trace.on_finished(timings, usage);
        }
    }
}

/// A choice's last delta and its end: one chunk where the format writes them so, else two.
fn last_chunks<F: ResponseFormat>(
    format: &F,
    totals: &Mutex<UsageTotals>,
    delta: ChoiceEvent,
    finished: ChoiceEvent,
    usage_field: ChunkUsage,
) -> Vec<Tagged> {
    let merged = match (&delta, &finished) {
        (
            ChoiceEvent::Delta {
                index, num_tokens, ..
            },
            ChoiceEvent::Finished {
                finish_reason,
                stop_reason,
                usage,
                ..
            },
        ) if format.joins_last_delta() => {
            let end = ChoiceEnd {
                finish_reason,
                stop_reason: stop_reason.clone(),
            };
            delta
                .delta_parts()
                .and_then(|parts| format.delta_choice(parts, Some(&end)))
                .map(|choice| (choice, *index, *num_tokens, *usage))
        }
        _ => None,
    };
    match merged {
        Some((choice, index, num_tokens, usage)) => {
            if let Ok(mut totals) = totals.lock() {
                totals.note_streamed(index, num_tokens);
                totals.add(index, &usage);
            }
            // A token's text: a delta write, as the timeline counts them.
            let chunk = format.chunk(vec![choice], usage_field.field(totals, index));
            vec![(data(&chunk), WriteKind::Delta)]
        }
        None => [delta, finished]
            .into_iter()
            .filter_map(|event| chunk_of(format, totals, event, usage_field))
            .collect(),
    }
}

/// The chunk one event becomes, and what it carries; an error becomes an OpenAI error object.
fn chunk_of<F: ResponseFormat>(
    format: &F,
    totals: &Mutex<UsageTotals>,
    event: ChoiceEvent,
    usage_field: ChunkUsage,
) -> Option<Tagged> {
    match event {
        ChoiceEvent::Delta {
            index, num_tokens, ..
        } => {
            if let Ok(mut totals) = totals.lock() {
                totals.note_streamed(index, num_tokens);
            }
            let choice = format.delta_choice(event.delta_parts()?, None)?;
            let usage = usage_field.field(totals, index);
            Some((data(&format.chunk(vec![choice], usage)), WriteKind::Delta))
        }
        ChoiceEvent::Finished {
            index,
            finish_reason,
            stop_reason,
            usage,
            ..
        } => {
            if let Ok(mut totals) = totals.lock() {
                totals.add(index, &usage);
            }
            let end = ChoiceEnd {
                finish_reason,
                stop_reason,
            };
            let choice = format.final_choice(index, &end);
            let usage = usage_field.field(totals, index);
            Some((data(&format.chunk(vec![choice], usage)), WriteKind::Finish))
        }
        ChoiceEvent::Error { error, .. } => {
            Some((Ok(Event::default().data(error.to_json())), WriteKind::Error))
        }
        // Not streamed (refused with `stream`, as vLLM does).
        ChoiceEvent::PromptLogprobs { .. } => None,
    }
}
