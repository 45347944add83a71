//! OpenAI's Responses API, as vLLM serves it: `POST /v1/responses` runs as a chat request
//! (same template, tools, structured outputs, reasoning parser, LoRA, metrics) and answers with
//! a Response object or its streamed events; `GET` and `DELETE /v1/responses/{id}` read and
//! forget stored responses, which `previous_response_id` continues.

pub mod events;
pub mod object;
pub mod request;
pub mod store;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Value};

use crate::metrics::Metrics;
use crate::middleware::RequestIdValue;
use crate::openai::chat::{start_chat, StartedChat};
use crate::openai::choice::ChoiceEvent;
use crate::openai::error::ApiError;
use crate::openai::format::{ChatFormat, ResponseFormat};
use crate::openai::json_body::JsonBody;
use crate::openai::requests::parse_body;
use crate::openai::respond::{collect_json, delta_parts, merged};
use crate::openai::usage::UsageTotals;
use crate::state::{unix_now_s, SharedState};
use events::ResponseEvents;
use object::{assistant_message, output_items, responses_usage, status_of, ResponseShell};
use request::{responses_param, ResponsesRequest};
use store::{ResponseStore, StoredResponse};

/// A chat error in the Responses request's terms.
fn renamed(mut error: ApiError) -> ApiError {
    error.param = error.param.map(|p| responses_param(&p));
    error.message = error.message.replace("max_tokens", "max_output_tokens");
    error
}

/// `resp_` and 32 random hex digits.
fn new_response_id() -> String {
    format!("resp_{:032x}", rand::random::<u128>())
}

fn not_found(id: &str) -> ApiError {
    ApiError {
        param: Some("previous_response_id".into()),
        ..ApiError::not_found(format!("Response with id '{id}' not found."))
    }
}

/// What a finished response leaves in the store (when `store` is not false).
#[derive(Debug, Clone)]
struct Keeping {
    store: Arc<ResponseStore>,
    conversation: Vec<Value>,
}

impl Keeping {
    fn keep(self, id: &str, response: &Value) {
        let mut messages = self.conversation;
        let output = response["output"].as_array().map_or(&[][..], Vec::as_slice);
        messages.push(assistant_message(output));
        let stored = StoredResponse {
            response: response.clone(),
            messages,
        };
        self.store.insert(id.to_string(), stored);
    }
}

pub async fn create_response(
    State(state): State<SharedState>,
    Extension(request_id): Extension<RequestIdValue>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request: ResponsesRequest = parse_body(&body)?;
    let history = match &request.previous_response_id {
        Some(id) => state
            .responses
            .get(id)
            .ok_or_else(|| not_found(id))?
            .messages
            .clone(),
        None => Vec::new(),
    };
    let conversation = request.conversation(&history)?;
    let chat_body = request.chat_body(&conversation)?;
    let chat_request = parse_body(chat_body.to_string().as_bytes()).map_err(renamed)?;
    let chat = start_chat(&state, &request_id, chat_request)
        .await
        .map_err(renamed)?;
    let model = state.response_model_name(&chat.params).to_string();
    let metrics = state.metrics.for_model(&model);
    let shell = ResponseShell::new(
        // Random, not the client's `x-request-id`: a stored response's id must not be chosen
        // by a client (two requests with one request id would overwrite each other).
        new_response_id(),
        unix_now_s(),
        model,
        &request,
    );
    let keeping = (request.store != Some(false)).then(|| Keeping {
        store: Arc::clone(&state.responses),
        conversation,
    });
    if chat.params.stream {
        return Ok(stream_response(
            chat,
            shell,
            metrics,
            keeping,
            state.sse_keep_alive,
        ));
    }
    let StartedChat {
        runs,
        format,
        totals,
        ..
    } = chat;
    let chat_json = collect_json(runs, format, totals, &metrics, None)
        .await
        .map_err(renamed)?;
    let choice = &chat_json["choices"][0];
    let status = status_of(choice["finish_reason"].as_str().unwrap_or("stop"));
    let output = output_items(&shell, choice);
    let response = shell.object(status, output, Some(responses_usage(&chat_json["usage"])));
    if let Some(keeping) = keeping {
        keeping.keep(&shell.id, &response);
    }
    Ok(Json(response).into_response())
}

pub async fn retrieve_response(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let stored = state.responses.get(&id).ok_or_else(|| ApiError {
        param: Some("response_id".into()),
        ..not_found(&id)
    })?;
    Ok(Json(stored.response.clone()).into_response())
}

pub async fn delete_response(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if !state.responses.remove(&id) {
        return Err(ApiError {
            param: Some("response_id".into()),
            ..not_found(&id)
        });
    }
    Ok(Json(json!({"id": id, "object": "response", "deleted": true})).into_response())
}

/// A streamed response while it is written.
struct Streaming {
    events: BoxStream<'static, ChoiceEvent>,
    format: ChatFormat,
    translator: ResponseEvents,
    totals: UsageTotals,
    metrics: Metrics,
    keeping: Option<Keeping>,
    id: String,
    pending: VecDeque<Value>,
    done: bool,
}

impl Streaming {
    /// The next events to write (`None` once the response is finished).
    async fn advance(&mut self) -> Option<()> {
        if self.done {
            return None;
        }
        let Some(event) = self.events.next().await else {
            self.done = true;
            let failed = self.translator.fail("server_error", "the engine stopped");
            self.pending.extend(failed);
            return Some(());
        };
        match event {
            ChoiceEvent::Delta { .. } => {
                let Some(choice) = delta_parts(&event).and_then(|p| self.format.delta_choice(p))
                else {
                    return Some(());
                };
                let logprobs = choice
                    .pointer("/logprobs/content")
                    .and_then(Value::as_array);
                let logprobs = logprobs.map_or(&[][..], Vec::as_slice);
                let events = self.translator.on_delta(&choice["delta"], logprobs);
                self.pending.extend(events);
            }
            ChoiceEvent::Finished {
                index,
                finish_reason,
                usage,
                ..
            } => self.finish(index, finish_reason, &usage),
            ChoiceEvent::Error { error, .. } => {
                self.done = true;
                let failed = self.translator.fail("server_error", &error.message);
                self.pending.extend(failed);
            }
            ChoiceEvent::PromptLogprobs { .. } => {}
        }
        Some(())
    }

    fn finish(&mut self, index: usize, finish_reason: &str, usage: &pagoda_engine::Usage) {
        self.done = true;
        self.totals.add(index, usage);
        self.metrics
            .record_max_num_generation_tokens(self.totals.max_choice_completion_tokens());
        // The readers' last text (a tool call the parser held, the reasoning's end).
        let last = self.format.final_choice(index, finish_reason);
        self.pending
            .extend(self.translator.on_delta(&last["delta"], &[]));
        let reason = last["finish_reason"].as_str().unwrap_or(finish_reason);
        let (events, response) = self.translator.finish(reason, &self.totals.to_json());
        self.pending.extend(events);
        if let Some(keeping) = self.keeping.take() {
            keeping.keep(&self.id, &response);
        }
    }
}

fn sse_event(value: &Value) -> Result<Event, Infallible> {
    let kind = value["type"].as_str().unwrap_or("message");
    Ok(Event::default().event(kind).data(value.to_string()))
}

fn stream_response(
    chat: StartedChat,
    shell: ResponseShell,
    metrics: Metrics,
    keeping: Option<Keeping>,
    keep_alive: std::time::Duration,
) -> Response {
    let id = shell.id.clone();
    let mut translator = ResponseEvents::new(shell);
    let pending: VecDeque<Value> = translator.opening().into();
    let streaming = Streaming {
        events: merged(chat.runs),
        format: chat.format,
        translator,
        totals: chat.totals,
        metrics,
        keeping,
        id,
        pending,
        done: false,
    };
    let events = stream::unfold(streaming, |mut streaming| async move {
        loop {
            if let Some(value) = streaming.pending.pop_front() {
                return Some((sse_event(&value), streaming));
            }
            streaming.advance().await?;
        }
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}
