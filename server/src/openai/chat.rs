//! `POST /v1/chat/completions`.

use std::time::Instant;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use pagoda_text::tool_calls::ToolCallFormat;
use serde_json::Value;

use crate::chat_prompt::{prompt_ending, Conversation};
use crate::middleware::RequestIdValue;
use crate::openai::bad_words::bad_words_token_ids;
use crate::openai::chat_format::ChatFormat;
use crate::openai::choice::ChoiceRun;
use crate::openai::constrain::{compile_requested, TOOL_CALL_KIND};
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::format::ResponseMeta;
use crate::openai::json_body::JsonBody;
use crate::openai::legacy_functions::read_legacy_functions;
use crate::openai::output_spec::requested_spec;
use crate::openai::params::GenerationParams;
use crate::openai::requests::{parse_body, ChatCompletionRequest};
use crate::openai::template_variables::request_template_kwargs;
use crate::openai::thinking_budget::thinking_budget;
use crate::openai::tool_output::ToolOutput;
use crate::openai::tools::{parse_tools, ToolsRequest};
use crate::openai::usage::UsageTotals;
use crate::openai::wire::chat::ChatCompletion;
use crate::openai::{record_accepted, respond, tokenize_blocking};
use crate::state::{unix_now_s, AppState, SharedState};
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
    let trace = state.request_trace(&request_id.0, received, chat.params.stream);
    respond::respond(
        chat.runs,
        chat.format,
        chat.totals,
        &chat.params,
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
    pub params: GenerationParams,
}

/// Checks a chat request, renders and tokenizes its prompt, and starts its choices (also what
/// the Responses API runs).
pub async fn start_chat(
    state: &SharedState,
    request_id: &RequestIdValue,
    mut request: ChatCompletionRequest,
) -> Result<StartedChat, ApiError> {
    let lora = state.select_model(request.fields.model.as_deref()).await?;
    let legacy_functions = read_legacy_functions(&mut request)?;
    if request.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must contain at least one message",
        ));
    }
    let logprobs = match (request.logprobs, request.top_logprobs) {
        (Some(true), top) => Some(top.unwrap_or(0) as usize),
        (_, Some(top)) if top > 0 => {
            return Err(ApiError::invalid(
                "top_logprobs",
                "`top_logprobs` requires `logprobs` to be true",
            ))
        }
        _ => None,
    };
    let mut params = GenerationParams::from_common(&request.common(), logprobs, &state.defaults)?;
    // vLLM's `include_reasoning: false` hides the thinking, and with it the generated tokens'
    // ids and log-probabilities, which would show it (the prompt's stay).
    let hide_reasoning = request.include_reasoning == Some(false) && state.reasoning.is_some();
    let logprobs = logprobs.filter(|_| !hide_reasoning);
    if hide_reasoning {
        params.sampling.logprobs = None;
        params.sampling.logprob_token_ids = None;
    }
    params.lora = lora;
    params.sampling.thinking_budget = thinking_budget(
        request.thinking_token_budget,
        state.reasoning,
        &state.tokenizer,
    )?;
    params.sampling.bad_words =
        bad_words_token_ids(&state.tokenizer, request.fields.bad_words.as_deref())?;
    let tools = parse_tools(
        request.tools.as_ref(),
        request.tool_choice.as_ref(),
        request.parallel_tool_calls,
    )?;
    let tool_output = match &tools {
        Some(tools) => tools.output(state.tool_calls)?,
        None => None,
    };
    constrain(state, &request, tools.as_ref(), &mut params).await?;
    if let Some(ToolOutput::Parsed {
        format: ToolCallFormat::Mistral,
        ..
    }) = tool_output
    {
        // `[TOOL_CALLS]` is a special token: keep it in the text the parser reads.
        params.skip_special_tokens = false;
    }
    let echo = echoed_text(&request)?;
    let role = response_role(state, &request);
    let prompt = chat_prompt_ids(state, request, tools.as_ref()).await?;
    let prompt = params.truncated_prompt(prompt, state.engine.info().max_model_len)?;
    let num_prompt_tokens = prompt.len();
    let request = state
        .validate_prompt(prompt, &params)
        .map_err(|e| e.naming_prompt("messages"))?;
    record_accepted(state, "chat", num_prompt_tokens, &params);
    let runs = state.start_choices(&request, &params, 0, logprobs.is_some(), None)?;
    let meta = ResponseMeta {
        id: format!("chatcmpl-{}", request_id.compact()),
        created_unix_s: unix_now_s(),
        model: state.response_model_name(&params).to_string(),
        want_logprobs: logprobs.is_some(),
        return_token_ids: params.return_token_ids && !hide_reasoning,
    };
    let totals = UsageTotals::new(vec![num_prompt_tokens], params.n);
    let format = ChatFormat::new(meta, tool_output, state.reasoning)
        .with_echo(echo)
        .with_role(role)
        .with_legacy_functions(legacy_functions)
        .with_reasoning_hidden(hide_reasoning);
    Ok(StartedChat {
        runs,
        format,
        totals,
        params,
    })
}

/// The replies' role, as vLLM chooses it: `--response-role` after a generation prompt, else the
/// role of the last message (the one the output continues).
fn response_role(state: &SharedState, request: &ChatCompletionRequest) -> String {
    // A contradicting pair is refused when the prompt is rendered; the role does not matter then.
    let ends_with_generation_prompt = prompt_ending(
        request.add_generation_prompt,
        request.continue_final_message,
    )
    .map_or(true, |(add_generation_prompt, _)| add_generation_prompt);
    match request.messages.last() {
        Some(last) if !ends_with_generation_prompt => last.role.clone(),
        _ => state.response_role.clone(),
    }
}

/// vLLM's chat `echo`: the text of the final message when it is the assistant's, which the
/// output then starts with.
fn echoed_text(request: &ChatCompletionRequest) -> Result<Option<String>, ApiError> {
    let last = request.messages.last().filter(|m| m.role == "assistant");
    match (request.echo, last) {
        (Some(true), Some(message)) => {
            let text = message.content.to_text().map_err(|error| {
                let last = request.messages.len() - 1;
                ApiError::invalid(format!("messages[{last}].content"), error.to_string())
            })?;
            Ok((!text.is_empty()).then_some(text))
        }
        _ => Ok(None),
    }
}

/// The prompt a chat request renders to (its messages and offered tools through the chat
/// template), as token ids.
async fn chat_prompt_ids(
    state: &SharedState,
    request: ChatCompletionRequest,
    tools: Option<&ToolsRequest>,
) -> Result<Vec<u32>, ApiError> {
    let (add_generation_prompt, continue_final_message) = prompt_ending(
        request.add_generation_prompt,
        request.continue_final_message,
    )?;
    let kwargs = request_template_kwargs(
        request.chat_template_kwargs.as_ref(),
        request.reasoning_effort.as_ref(),
        request.documents.as_ref(),
    )?;
    let state = state.clone();
    let messages = request.messages;
    let offered: Option<Vec<Value>> = tools.and_then(|t| t.offered().map(<[Value]>::to_vec));
    // vLLM's: special tokens (BOS) on top of what the template writes; off by default.
    let add_special_tokens = request.add_special_tokens.unwrap_or(false);
    tokenize_blocking(move || {
        let conversation = Conversation {
            messages: &messages,
            tools: offered.as_deref(),
            add_generation_prompt,
            continue_final_message,
            template_kwargs: &kwargs,
        };
        state.chat_prompt_ids(conversation, add_special_tokens)
    })
    .await
}

/// How many tokens a chat request's prompt is, without running it (the Responses API's
/// `input_tokens`): the model is checked, the tools read, the prompt rendered.
pub async fn count_prompt_tokens(
    state: &SharedState,
    mut request: ChatCompletionRequest,
) -> Result<usize, ApiError> {
    state.check_model(request.fields.model.as_deref())?;
    read_legacy_functions(&mut request)?;
    let tools = parse_tools(
        request.tools.as_ref(),
        request.tool_choice.as_ref(),
        request.parallel_tool_calls,
    )?;
    if let Some(tools) = &tools {
        // What the request could not run with is refused here too.
        tools.output(state.tool_calls)?;
    }
    Ok(chat_prompt_ids(state, request, tools.as_ref()).await?.len())
}

/// Compiles what constrains the output: a forced tool call, or the request's structured-output
/// field. Tools are compiled even when nothing is forced, so bad parameter schemas are a 400.
async fn constrain(
    state: &AppState,
    request: &ChatCompletionRequest,
    tools: Option<&ToolsRequest>,
    params: &mut GenerationParams,
) -> Result<(), ApiError> {
    let compiler = state.grammar_compiler.as_deref();
    let requested = requested_spec(&request.fields, request.response_format.as_ref())?;
    let forced = tools.and_then(ToolsRequest::forced_spec);
    if let (Some(requested), Some(_)) = (&requested, &forced) {
        return Err(ApiError::invalid(
            requested.field.clone(),
            format!(
                "`{}` cannot be combined with a tool_choice that forces a call",
                requested.field
            ),
        ));
    }
    // Without a compiler (a tokenizer llguidance cannot read) only forced calls need one.
    if let (Some(tools), Some(_)) = (tools, compiler) {
        for spec in tools.validation_specs() {
            compile_requested(compiler, &state.metrics, &spec).await?;
        }
    }
    let (spec, kind) = match (forced, requested) {
        (Some(forced), _) => (forced, TOOL_CALL_KIND),
        (None, Some(requested)) => {
            let kind = requested.spec.kind();
            (requested, kind)
        }
        (None, None) => return Ok(()),
    };
    params.constraint = Some(compile_requested(compiler, &state.metrics, &spec).await?);
    state.metrics.record_structured_request(kind);
    Ok(())
}
