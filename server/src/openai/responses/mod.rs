//! OpenAI's Responses API, as vLLM serves it: `POST /v1/responses` runs as a chat request
//! (same template, tools, structured outputs, reasoning parser, LoRA, metrics) and answers with
//! a Response object or its streamed events; `GET` and `DELETE /v1/responses/{id}` read and
//! forget stored responses, which `previous_response_id` continues.

pub mod api_state;
pub mod background;
#[cfg(test)]
mod chat_json;
pub mod event_sequence;
pub mod events;
pub mod input;
pub mod input_items;
pub mod object;
pub mod request;
pub mod settings;
pub mod store;
pub mod streaming;

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use pagoda_text::template::ChatMessage;
use serde::Deserialize;

use crate::middleware::RequestIdValue;
use crate::openai::chat::{count_prompt_tokens, start_chat, StartedChat};
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::reply::collect::collect_whole;
use crate::openai::request::body::ChatCompletionRequest;
use crate::openai::request::json_body::JsonBody;
use crate::openai::request::parse::parse_body;
use crate::openai::request::path_param::PathParam;
use crate::openai::wire::responses::{
    DeletedResponse, InputTokensCount, ResponseObject, ResponseShell, ResponseStatus,
};
use crate::openai::wire::responses_input_items::InputItemList;
use crate::openai::wire::responses_usage::ResponsesUsage;
use crate::state::SharedState;
use crate::unix_time::unix_now_s;
use api_state::ResponsesState;
use input_items::{input_items, page, ListQuery};
use object::{output_items, status_of};
use request::{responses_param, ResponsesRequest};
use store::Keeping;
use streaming::{sse_response, start_in_background, stream_response, Streaming};

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

fn response_not_found(id: &str) -> ApiError {
    ApiError {
        param: Some("response_id".into()),
        ..not_found(id)
    }
}

/// The conversation a `previous_response_id` continues: the stored one's, once it has ended.
fn history(
    stores: &ResponsesState,
    request: &ResponsesRequest,
) -> Result<Vec<ChatMessage>, ApiError> {
    let Some(id) = &request.previous_response_id else {
        return Ok(Vec::new());
    };
    let stored = stores.stored.get(id).ok_or_else(|| not_found(id))?;
    if stored.response.status.is_running() {
        return Err(ApiError::invalid(
            "previous_response_id",
            format!("Response '{id}' is still in progress: continue it once it has finished"),
        ));
    }
    Ok(stored.messages.clone())
}

/// The conversation a request continues (a stored one, then its input) and the chat request
/// it runs as.
fn chat_request_of(
    stores: &ResponsesState,
    request: &ResponsesRequest,
) -> Result<(Vec<ChatMessage>, ChatCompletionRequest), ApiError> {
    settings::check_settings(request)?;
    let conversation = request.conversation(&history(stores, request)?)?;
    let chat_request = request.chat_request(&conversation)?;
    Ok((conversation, chat_request))
}

#[utoipa::path(
    post,
    path = "/v1/responses",
    tag = "OpenAI",
    summary = "Responses API: create a response (whole, streamed or in the background)",
    request_body = Object,
    responses(
        (status = 200, description = "A Response object (`queued` for `background: true`), or with `stream: true` server-sent events whose data are ResponseStreamEvent objects", content((ResponseObject = "application/json"), (String = "text/event-stream"))),
        ErrorResponses,
    )
)]
pub async fn create_response(
    State(state): State<SharedState>,
    Extension(stores): Extension<ResponsesState>,
    Extension(request_id): Extension<RequestIdValue>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request: ResponsesRequest = parse_body(&body)?;
    let (conversation, chat_request) = chat_request_of(&stores, &request)?;
    let chat = start_chat(&state, &request_id, chat_request)
        .await
        .map_err(renamed)?;
    let model = chat.plan.reply.model.clone();
    let metrics = state.metrics.for_model(&model);
    let shell = ResponseShell::new(
        // Random, not the client's `x-request-id`: a stored response's id must not be chosen
        // by a client (two requests with one request id would overwrite each other).
        new_response_id(),
        unix_now_s(),
        model,
        &request,
    );
    let background = request.background == Some(true);
    let keeping = (request.store != Some(false)).then(|| Keeping {
        store: Arc::clone(&stores.stored),
        conversation,
        input_items: input_items(&request.input, &shell.id),
        background,
    });
    if background {
        let stream = request.stream == Some(true);
        return Ok(start_background(
            &state, &stores, chat, shell, metrics, keeping, stream,
        ));
    }
    if chat.plan.reply.stream {
        let streaming = Streaming::new(chat, shell, metrics, keeping);
        return Ok(stream_response(streaming, state.sse_keep_alive));
    }
    let StartedChat {
        runs,
        format,
        totals,
        ..
    } = chat;
    let collected = collect_whole(runs, format, totals, &metrics, None)
        .await
        .map_err(renamed)?;
    // The Responses API reads chat's answer as chat's clients see it: its one choice.
    let choice = collected
        .response
        .choices
        .first()
        .ok_or_else(|| ApiError::internal("the chat answer has no choice"))?;
    let status = status_of(&choice.finish_reason);
    let output = output_items(&shell, choice);
    let usage = ResponsesUsage::from(&collected.usage);
    let response = shell.object(status, output, Some(usage));
    if let Some(keeping) = keeping {
        keeping.keep(&shell.id, &response);
    }
    Ok(Json(response).into_response())
}

/// `POST /v1/responses/input_tokens` (the SDK's `responses.input_tokens.count`): how many tokens
/// the request's prompt would be (instructions, a stored conversation, input, tools), without
/// running it.
#[utoipa::path(
    post,
    path = "/v1/responses/input_tokens",
    tag = "OpenAI",
    summary = "Responses API: count a request's input tokens",
    request_body = Object,
    responses(
        (status = 200, description = "The prompt's token count", body = InputTokensCount),
        ErrorResponses,
    )
)]
pub async fn count_input_tokens(
    State(state): State<SharedState>,
    Extension(stores): Extension<ResponsesState>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request: ResponsesRequest = parse_body(&body)?;
    let (_, chat_request) = chat_request_of(&stores, &request)?;
    let input_tokens = count_prompt_tokens(&state, chat_request)
        .await
        .map_err(renamed)?;
    Ok(Json(InputTokensCount::new(input_tokens)).into_response())
}

/// A background response: stored as in progress, run on its own task; the answer is the queued
/// Response (or, streamed, the run's events as they come).
fn start_background(
    state: &SharedState,
    stores: &ResponsesState,
    chat: StartedChat,
    shell: ResponseShell,
    metrics: crate::metrics::Metrics,
    keeping: Option<Keeping>,
    stream: bool,
) -> Response {
    if let Some(keeping) = &keeping {
        let running = shell.object(ResponseStatus::InProgress, Vec::new(), None);
        keeping.keep_running(&shell.id, &running);
    }
    let queued = shell.object(ResponseStatus::Queued, Vec::new(), None);
    let streaming = Streaming::new(chat, shell, metrics, keeping);
    let run = start_in_background(&stores.background, streaming);
    match stream {
        true => sse_response(run.follow(None), state.sse_keep_alive),
        false => Json(queued).into_response(),
    }
}

/// `GET /v1/responses/{id}`'s query: `stream=true` follows a background response's events
/// (after `starting_after`, a sequence number).
#[derive(Debug, Deserialize)]
pub struct RetrieveQuery {
    #[serde(default)]
    stream: bool,
    starting_after: Option<u64>,
}

#[utoipa::path(
    get,
    path = "/v1/responses/{id}",
    tag = "OpenAI",
    summary = "Responses API: a stored response, or its events again",
    params(("id" = String, Path, description = "The response id"), ("stream" = Option<bool>, Query, description = "Replay a background response's events"), ("starting_after" = Option<u64>, Query, description = "Events after this sequence number")),
    responses(
        (status = 200, description = "The Response object, or with `stream=true` its events (ResponseStreamEvent objects)", content((ResponseObject = "application/json"), (String = "text/event-stream"))),
        ErrorResponses,
    )
)]
pub async fn retrieve_response(
    State(state): State<SharedState>,
    Extension(stores): Extension<ResponsesState>,
    PathParam(id): PathParam,
    query: Result<Query<RetrieveQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| {
        let text = rejection.body_text();
        let param = match text.contains("starting_after") {
            true => "starting_after",
            false => "stream",
        };
        ApiError::invalid(param, format!("bad query: {text}"))
    })?;
    let stored = stores
        .stored
        .get(&id)
        .ok_or_else(|| response_not_found(&id))?;
    if !query.stream {
        return Ok(Json(stored.response.clone()).into_response());
    }
    let run = stores.background.get(&id).ok_or_else(|| {
        let message = if stored.response.shell.background {
            format!(
                "the events of response '{id}' are no longer kept: retrieve it without `stream`"
            )
        } else {
            format!(
                "response '{id}' was not created with `background: true`: only background \
                 responses can be streamed again"
            )
        };
        ApiError::invalid("stream", message)
    })?;
    if let (Some(after), Some(num_events)) = (query.starting_after, run.num_events_if_finished()) {
        if after >= num_events as u64 {
            return Err(ApiError::invalid(
                "starting_after",
                format!(
                    "response '{id}' has ended after {num_events} events (sequence numbers 0 to \
                     {}): there is no event {after}",
                    num_events.saturating_sub(1)
                ),
            ));
        }
    }
    Ok(sse_response(
        run.follow(query.starting_after),
        state.sse_keep_alive,
    ))
}

/// `GET /v1/responses/{id}/input_items`: the response's own input, a page at a time.
#[utoipa::path(
    get,
    path = "/v1/responses/{id}/input_items",
    tag = "OpenAI",
    summary = "Responses API: a stored response's input items, a page at a time",
    params(("id" = String, Path, description = "The response id"), ("limit" = Option<u32>, Query, description = "Items per page (1-100)"), ("order" = Option<String>, Query, description = "`asc` or `desc`"), ("after" = Option<String>, Query, description = "An item id to start after")),
    responses(
        (status = 200, description = "A list page of input items", body = InputItemList),
        ErrorResponses,
    )
)]
pub async fn list_input_items(
    Extension(stores): Extension<ResponsesState>,
    PathParam(id): PathParam,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| {
        ApiError::invalid("limit", format!("bad query: {}", rejection.body_text()))
    })?;
    let stored = stores
        .stored
        .get(&id)
        .ok_or_else(|| response_not_found(&id))?;
    Ok(Json(page(&stored.input_items, &query)?).into_response())
}

/// `POST /v1/responses/{id}/cancel`: stops a background response that is still running and
/// answers it, `cancelled`; a cancelled one is answered again.
#[utoipa::path(
    post,
    path = "/v1/responses/{id}/cancel",
    tag = "OpenAI",
    summary = "Responses API: cancel a background response",
    params(("id" = String, Path, description = "The response id")),
    responses(
        (status = 200, description = "The cancelled Response object", body = ResponseObject),
        ErrorResponses,
    )
)]
pub async fn cancel_response(
    Extension(stores): Extension<ResponsesState>,
    PathParam(id): PathParam,
) -> Result<Response, ApiError> {
    let stored = stores
        .stored
        .get(&id)
        .ok_or_else(|| response_not_found(&id))?;
    if !stored.response.shell.background {
        return Err(ApiError::invalid(
            "response_id",
            "Cannot cancel a synchronous response: only responses created with \
             `background: true` can be cancelled.",
        ));
    }
    if let Some(run) = stores.background.get(&id) {
        run.cancel().await;
    }
    let stored = stores
        .stored
        .get(&id)
        .ok_or_else(|| response_not_found(&id))?;
    match stored.response.status {
        ResponseStatus::Cancelled => Ok(Json(stored.response.clone()).into_response()),
        status => Err(ApiError::invalid(
            "response_id",
            format!(
                "Cannot cancel response '{id}': it has already ended ({}).",
                status.as_str()
            ),
        )),
    }
}

/// `DELETE /v1/responses/{id}`: forgets a response (a running background one is cancelled
/// first).
#[utoipa::path(
    delete,
    path = "/v1/responses/{id}",
    tag = "OpenAI",
    summary = "Responses API: forget a stored response",
    params(("id" = String, Path, description = "The response id")),
    responses(
        (status = 200, description = "The response is forgotten", body = DeletedResponse),
        ErrorResponses,
    )
)]
pub async fn delete_response(
    Extension(stores): Extension<ResponsesState>,
    PathParam(id): PathParam,
) -> Result<Response, ApiError> {
    if let Some(run) = stores.background.get(&id) {
        run.cancel().await;
        stores.background.forget(&id);
    }
    if !stores.stored.remove(&id) {
        return Err(response_not_found(&id));
    }
    Ok(Json(DeletedResponse::new(id)).into_response())
}
