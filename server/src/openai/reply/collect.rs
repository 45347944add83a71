//! A non-streamed response: every choice's events gathered into one typed body.

use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;

use crate::metrics::Metrics;
use crate::openai::choices::events::ChoiceEvent;
use crate::openai::choices::run::merged;
use crate::openai::choices::run::ChoiceRun;
use crate::openai::choices::usage::UsageTotals;
use crate::openai::error::ApiError;
use crate::openai::reply::format::{FinishedChoice, ResponseFormat};
use crate::openai::wire::usage::Usage;
use crate::timeline::RequestTrace;

/// Waits for every choice and writes the whole response.
pub async fn collect<F: ResponseFormat>(
    runs: Vec<ChoiceRun>,
    format: F,
    totals: UsageTotals,
    metrics: &Metrics,
    trace: Option<&mut RequestTrace>,
) -> Result<Response, ApiError> {
    let collected = collect_whole(runs, format, totals, metrics, trace).await?;
    Ok(Json(collected.response).into_response())
}

/// A whole response as the format writes it, and its usage (with the format's details).
#[derive(Debug)]
pub struct Collected<W> {
    pub response: W,
    pub usage: Usage,
}

/// Waits for every choice and returns the whole response.
pub async fn collect_whole<F: ResponseFormat>(
    runs: Vec<ChoiceRun>,
    format: F,
    mut totals: UsageTotals,
    metrics: &Metrics,
    mut trace: Option<&mut RequestTrace>,
) -> Result<Collected<F::Whole>, ApiError> {
    let mut choices: Vec<FinishedChoice> = Vec::with_capacity(runs.len());
    let mut events = merged(runs);
    while let Some(event) = events.next().await {
        if let Some(parts) = event.delta_parts() {
            format.observe(parts);
        }
        match event {
            ChoiceEvent::Delta {
                index,
                text,
                logprobs,
                token_ids,
                prompt_token_ids,
                ..
            } => {
                let choice = choice_at(&mut choices, index);
                choice.text.push_str(&text);
                choice.logprobs.extend(logprobs);
                choice.token_ids.extend(token_ids);
                if prompt_token_ids.is_some() {
                    choice.prompt_token_ids = prompt_token_ids;
                }
            }
            ChoiceEvent::Finished {
                index,
                finish_reason,
                stop_reason,
                usage,
                timings,
            } => {
                if let Some(trace) = trace.as_mut() {
                    trace.on_finished(&timings, &usage);
                }
                totals.add(index, &usage);
                let choice = choice_at(&mut choices, index);
                choice.finish_reason = finish_reason.to_string();
                choice.stop_reason = stop_reason;
            }
            ChoiceEvent::Error { error, .. } => return Err(error),
            ChoiceEvent::PromptLogprobs { index, logprobs } => {
                choice_at(&mut choices, index).prompt_logprobs = Some(logprobs);
            }
        }
    }
    metrics.record_max_num_generation_tokens(totals.max_choice_completion_tokens());
    choices.sort_by_key(|c| c.index);
    let usage = totals.usage();
    let response = format.response(choices, usage);
    Ok(Collected {
        response,
        usage: format.with_details(usage),
    })
}

fn choice_at(choices: &mut Vec<FinishedChoice>, index: usize) -> &mut FinishedChoice {
    let position = match choices.iter().position(|c| c.index == index) {
        Some(position) => position,
        None => {
            choices.push(FinishedChoice {
                index,
                ..FinishedChoice::default()
            });
            choices.len() - 1
        }
    };
    &mut choices[position]
}
