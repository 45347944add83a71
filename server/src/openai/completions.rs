//! `POST /v1/completions`: prompts as text or token ids, one or several.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;

use crate::middleware::RequestIdValue;
use crate::openai::choices::prompt_side::EchoPrompt;
use crate::openai::choices::start::{start_choices, validate_prompt};
use crate::openai::choices::usage::UsageTotals;
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::reply::completion_format::CompletionFormat;
use crate::openai::reply::format::ResponseMeta;
use crate::openai::reply::respond;
use crate::openai::request::bad_words::bad_words_token_ids;
use crate::openai::request::body::{CompletionRequest, PromptInput};
use crate::openai::request::fields::CheckedFields;
use crate::openai::request::json_body::JsonBody;
use crate::openai::request::model_select::select_model;
use crate::openai::request::parse::parse_body;
use crate::openai::request::plan::{RequestPlan, Resolved};
use crate::openai::tools::constrain::compile_requested;
use crate::openai::tools::output_spec::requested_spec;
use crate::openai::wire::completion::Completion;
use crate::openai::{record_accepted, tokenize_blocking};
use crate::state::{AppState, SharedState};
use crate::timeline::ReceivedAt;
use pagoda_engine::validate::check_max_logprobs;

/// The most prompts one request may batch.
pub const MAX_PROMPTS: usize = 64;

#[utoipa::path(
    post,
    path = "/v1/completions",
    tag = "OpenAI",
    summary = "Text completion, whole or streamed (stream: true)",
    request_body = CompletionRequest,
    responses(
        (status = 200, description = "`text_completion`, or with `stream: true` server-sent events whose data are `text_completion` chunks, then `[DONE]`", content((Completion = "application/json"), (String = "text/event-stream"))),
        ErrorResponses,
    )
)]
pub async fn completions(
    State(state): State<SharedState>,
    Extension(request_id): Extension<RequestIdValue>,
    received: Option<Extension<ReceivedAt>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let received = received.map_or_else(Instant::now, |Extension(at)| at.0);
    let request: CompletionRequest = parse_body(&body)?;
    let plan = completion_plan(&state, &request).await?;
    let mut prompt_texts = prompt_texts(&request.prompt);
    let prompts = prompt_ids(&state, request.prompt).await?;
    let prompts = truncated(&plan, prompts, state.engine.info().max_model_len)?;
    if plan.engine.truncation.is_some() {
        // The echo shows what the model read: the kept tokens, decoded.
        prompt_texts = None;
    }
    let echoes: Vec<Option<Arc<EchoPrompt>>> = match plan.text.echo {
        Some(_) => echo_prompts(&state, &prompts, prompt_texts).await?,
        None => vec![None; prompts.len()],
    };
    let num_prompt_tokens_each: Vec<usize> = prompts.iter().map(Vec::len).collect();
    let num_prompt_tokens: usize = num_prompt_tokens_each.iter().sum();
    // Every prompt is checked before any is started.
    let requests = prompts
        .into_iter()
        .map(|prompt| validate_prompt(&state, prompt, &plan))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.naming_prompt("prompt"))?;
    record_accepted(&state, "completion", num_prompt_tokens, &plan);
    let plan = Arc::new(plan);
    let num_choices = plan.engine.n;
    let mut runs = Vec::with_capacity(requests.len() * num_choices);
    for (prompt_index, (request, echo)) in requests.iter().zip(echoes).enumerate() {
        let first_index = prompt_index * num_choices;
        runs.extend(start_choices(&state, request, &plan, first_index, echo)?);
    }
    let meta = ResponseMeta::new(format!("cmpl-{}", request_id.compact()), &plan);
    let totals = UsageTotals::new(num_prompt_tokens_each, num_choices);
    let trace = state.request_trace(&request_id.0, received, plan.reply.stream);
    respond::respond(runs, CompletionFormat(meta), totals, &plan, &state, trace).await
}

/// A completion request's plan, built once: its fields checked, then its model, banned words
/// and grammar resolved.
async fn completion_plan(
    state: &AppState,
    request: &CompletionRequest,
) -> Result<RequestPlan, ApiError> {
    let model = select_model(state, request.fields.model.as_deref()).await?;
    reject_unsupported(request)?;
    let logprobs = request.logprobs.map(|n| n as usize);
    check_max_logprobs("logprobs", logprobs, state.engine.info().max_logprobs)?;
    let fields = CheckedFields::check(&request.common(), logprobs, &state.defaults)?;
    let bad_words = bad_words_token_ids(&state.tokenizer, request.fields.bad_words.as_deref())?;
    let echo = request.echo == Some(true);
    let echoes_prompt_only = echo && fields.stop.max_tokens == Some(0);
    if echoes_prompt_only && fields.sampling.logprob_token_ids.is_some() {
        return Err(ApiError::invalid(
            "logprob_token_ids",
            "`logprob_token_ids` needs generated tokens: not with `echo` and `max_tokens: 0`",
        ));
    }
    let constraint = match requested_spec(&request.fields, request.response_format.as_ref())? {
        Some(requested) => {
            let compiler = state.grammar_compiler.as_deref();
            let constraint = compile_requested(compiler, &state.metrics, &requested).await?;
            let kind = requested.spec.kind();
            state.metrics.record_structured_request(kind);
            Some(constraint)
        }
        None => None,
    };
    let resolved = Resolved {
        model,
        bad_words,
        constraint,
        echo,
        ..Resolved::default()
    };
    Ok(RequestPlan::new(fields, resolved))
}

/// Every prompt as the model reads it (`truncate_prompt_tokens`).
fn truncated(
    plan: &RequestPlan,
    prompts: Vec<Vec<u32>>,
    max_model_len: usize,
) -> Result<Vec<Vec<u32>>, ApiError> {
    prompts
        .into_iter()
        .map(|prompt| plan.engine.truncated_prompt(prompt, max_model_len))
        .collect()
}

fn reject_unsupported(request: &CompletionRequest) -> Result<(), ApiError> {
    if request.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::unsupported(
            "suffix",
            "`suffix` (fill-in-the-middle)",
        ));
    }
    if let Some(best_of) = request.best_of {
        if best_of != request.fields.n.unwrap_or(1) {
            return Err(ApiError::unsupported(
                "best_of",
                "`best_of` different from `n`",
            ));
        }
    }
    Ok(())
}

/// The prompts as the client wrote them, when it wrote text.
fn prompt_texts(prompt: &PromptInput) -> Option<Vec<String>> {
    match prompt {
        PromptInput::Text(text) => Some(vec![text.clone()]),
        PromptInput::Texts(texts) => Some(texts.clone()),
        PromptInput::TokenIds(_) | PromptInput::TokenIdLists(_) => None,
    }
}

/// What `echo` writes of each prompt: the client's text, or its token ids decoded (special
/// tokens included: the echo shows what the model read).
async fn echo_prompts(
    state: &SharedState,
    prompts: &[Vec<u32>],
    texts: Option<Vec<String>>,
) -> Result<Vec<Option<Arc<EchoPrompt>>>, ApiError> {
    let texts = match texts {
        Some(texts) => texts,
        None => {
            let (state, prompts) = (state.clone(), prompts.to_vec());
            tokenize_blocking(move || {
                prompts
                    .iter()
                    .map(|ids| Ok(state.tokenizer.decode(ids, false)?))
                    .collect()
            })
            .await?
        }
    };
    Ok(prompts
        .iter()
        .zip(texts)
        .map(|(ids, text)| {
            Some(Arc::new(EchoPrompt {
                text,
                token_ids: ids.clone(),
            }))
        })
        .collect())
}

/// Token ids of every prompt; text is tokenized with the model's BOS when it wants one.
async fn prompt_ids(state: &SharedState, prompt: PromptInput) -> Result<Vec<Vec<u32>>, ApiError> {
    let prompts = match prompt {
        PromptInput::TokenIds(ids) => vec![ids],
        PromptInput::TokenIdLists(lists) => lists,
        PromptInput::Text(text) => {
            let state = state.clone();
            vec![tokenize_blocking(move || Ok(state.tokenizer.encode(&text, true)?)).await?]
        }
        PromptInput::Texts(texts) => {
            let state = state.clone();
            tokenize_blocking(move || {
                texts
                    .iter()
                    .map(|t| Ok(state.tokenizer.encode(t, true)?))
                    .collect()
            })
            .await?
        }
    };
    if prompts.is_empty() {
        return Err(ApiError::invalid("prompt", "`prompt` must not be empty"));
    }
    if prompts.len() > MAX_PROMPTS {
        return Err(ApiError::invalid(
            "prompt",
            format!(
                "at most {MAX_PROMPTS} prompts per request, got {}",
                prompts.len()
            ),
        ));
    }
    if prompts.iter().any(Vec::is_empty) {
        return Err(ApiError::invalid(
            "prompt",
            "a prompt must contain at least one token",
        ));
    }
    Ok(prompts)
}
