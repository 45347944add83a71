//! `POST /v1/chat/completions`.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use serde_json::Value;

use crate::chat_prompt::{prompt_ending, Conversation};
use crate::middleware::RequestIdValue;
use crate::openai::choices::run::ChoiceRun;
use crate::openai::choices::start::{start_choices, validate_prompt};
use crate::openai::choices::usage::UsageTotals;
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::reply::chat_format::ChatFormat;
use crate::openai::reply::format::ResponseMeta;
use crate::openai::reply::respond;
use crate::openai::request::body::ChatCompletionRequest;
use crate::openai::request::chat_plan::ChatPlan;
use crate::openai::request::json_body::JsonBody;
use crate::openai::request::model_select::check_model;
use crate::openai::request::parse::parse_body;
use crate::openai::request::plan::RequestPlan;
use crate::openai::request::template_variables::request_template_kwargs;
use crate::openai::tools::legacy_functions::read_legacy_functions;
use crate::openai::tools::request::{parse_tools, ToolsRequest};
use crate::openai::wire::chat::ChatCompletion;
use crate::openai::{record_accepted, render_chat_prompt, tokenize_blocking};
use crate::state::SharedState;
use crate::timeline::ReceivedAt;

#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "OpenAI",
    summary = "Chat completion, whole or streamed (stream: true)",
    request_body = ChatCompletionRequest,
    responses(
        (status = 200, description = "`chat.completion`, or with `stream: true` server-sent events whose data are `chat.completion.chunk` objects (ChatCompletionChunk), then `[DONE]`", content((ChatCompletion = "application/json"), (String = "text/event-stream"))),
        ErrorResponses,
    )
)]
pub async fn chat_completions(
    State(state): State<SharedState>,
    Extension(request_id): Extension<RequestIdValue>,
    received: Option<Extension<ReceivedAt>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let received = received.map_or_else(Instant::now, |Extension(at)| at.0);
    let request: ChatCompletionRequest = parse_body(&body)?;
    let chat = start_chat(&state, &request_id, request).await?;
    let trace = state.request_trace(&request_id.0, received, chat.plan.reply.stream);
    respond::respond(
        chat.runs,
        chat.format,
        chat.totals,
        &chat.plan,
        &state,
        trace,
    )
    .await
}

/// A chat request started in the engine: its choices and how to write them.
#[derive(Debug)]
pub struct StartedChat {
    pub runs: Vec<ChoiceRun>,
    pub format: ChatFormat,
    pub totals: UsageTotals,
    pub plan: Arc<RequestPlan>,
}

/// Plans a chat request, renders and tokenizes its prompt, and starts its choices (also what
/// the Responses API runs).
pub async fn start_chat(
    state: &SharedState,
    request_id: &RequestIdValue,
    mut request: ChatCompletionRequest,
) -> Result<StartedChat, ApiError> {
    let ChatPlan { plan, tools, text } = ChatPlan::build(state, &mut request).await?;
    let prompt = chat_prompt_ids(state, request, tools.as_ref()).await?;
    let prompt = plan
        .engine
        .truncated_prompt(prompt, state.engine.info().max_model_len)?;
    let num_prompt_tokens = prompt.len();
    let request = validate_prompt(state, prompt, &plan).map_err(|e| e.naming_prompt("messages"))?;
    record_accepted(state, "chat", num_prompt_tokens, &plan);
    let plan = Arc::new(plan);
    let runs = start_choices(state, &request, &plan, 0, None)?;
    let meta = ResponseMeta::new(format!("chatcmpl-{}", request_id.compact()), &plan);
    Ok(StartedChat {
        runs,
        format: ChatFormat::new(meta, text),
        totals: UsageTotals::new(vec![num_prompt_tokens], plan.engine.n),
        plan,
    })
}

/// The prompt a chat request renders to (its messages and offered tools through the chat
/// template), as token ids.
async fn chat_prompt_ids(
    state: &SharedState,
    request: ChatCompletionRequest,
    tools: Option<&ToolsRequest>,
) -> Result<Vec<u32>, ApiError> {
    let (add_generation_prompt, continue_final_message) = prompt_ending(
        request.options.add_generation_prompt,
        request.options.continue_final_message,
    )?;
    let kwargs = request_template_kwargs(
        request.options.chat_template_kwargs.as_ref(),
        request.options.reasoning_effort.as_ref(),
        request.options.documents.as_ref(),
    )?;
    let state = state.clone();
    let messages = request.messages;
    let offered: Option<Vec<Value>> = tools.and_then(|t| t.offered().map(<[Value]>::to_vec));
    // vLLM's: special tokens (BOS) on top of what the template writes; off by default.
    let add_special_tokens = request.options.add_special_tokens.unwrap_or(false);
    tokenize_blocking(move || {
        let conversation = Conversation {
            messages: &messages,
            tools: offered.as_deref(),
            add_generation_prompt,
            continue_final_message,
            template_kwargs: &kwargs,
        };
        render_chat_prompt(&state, conversation, add_special_tokens)
    })
    .await
}

/// How many tokens a chat request's prompt is, without running it (the Responses API's
/// `input_tokens`): the model is checked, the tools read, the prompt rendered.
pub async fn count_prompt_tokens(
    state: &SharedState,
    mut request: ChatCompletionRequest,
) -> Result<usize, ApiError> {
    check_model(state, request.options.fields.model.as_deref())?;
    read_legacy_functions(&mut request)?;
    let tools = parse_tools(
        request.options.tools.as_ref(),
        request.options.tool_choice.as_ref(),
        request.options.parallel_tool_calls,
    )?;
    if let Some(tools) = &tools {
        // What the request could not run with is refused here too.
        tools.output(state.tool_calls)?;
    }
    Ok(chat_prompt_ids(state, request, tools.as_ref()).await?.len())
}
