//! A request's choices started: each prompt checked once by the engine, then its `n` engine
//! requests submitted, each read by a [`ChoiceRun`].

use std::sync::Arc;

use pagoda_engine::ValidRequest;

use crate::openai::choices::prompt_side::{EchoPrompt, PromptSide};
use crate::openai::choices::run::{ChoiceContext, ChoiceRun, Submission};
use crate::openai::error::ApiError;
use crate::openai::request::plan::RequestPlan;
use crate::state::AppState;

/// Checks one prompt with the request's plan against the engine, once: the only way to the
/// [`ValidRequest`] that [`start_choices`] submits.
pub fn validate_prompt(
    state: &AppState,
    prompt: Vec<u32>,
    plan: &RequestPlan,
) -> Result<ValidRequest, ApiError> {
    let request = plan
        .engine
        .engine_request(state.engine.next_request_id(), prompt);
    Ok(state.engine.validate(request)?)
}

/// Submits the `n` choices of one checked prompt; choice `i` gets index `first_index + i`.
pub fn start_choices(
    state: &AppState,
    request: &ValidRequest,
    plan: &Arc<RequestPlan>,
    first_index: usize,
    echo: Option<Arc<EchoPrompt>>,
) -> Result<Vec<ChoiceRun>, ApiError> {
    if state.is_draining() {
        return Err(ApiError::shutting_down());
    }
    let num_choices = plan.engine.n;
    let slots = state.admission.try_admit(num_choices)?;
    let context = ChoiceContext {
        engine: state.engine.clone(),
        tokenizer: Arc::clone(&state.tokenizer),
        metrics: state.metrics.for_model(&plan.reply.model),
        plan: Arc::clone(plan),
    };
    let mut prompt = PromptSide::new(plan.reply.prompt_logprobs, echo, plan.logprobs());
    prompt.naming = plan.reply.naming;
    if plan.reply.return_prompt_token_ids {
        prompt.token_ids = Some(request.request().prompt.as_slice().into());
    }
    let submission = Submission {
        at: request.request().arrival,
        num_prompt_tokens: request.request().prompt.len(),
    };
    let mut runs = Vec::with_capacity(num_choices);
    for (offset, slot) in slots.into_iter().enumerate() {
        let choice = if offset == 0 {
            request.clone()
        } else {
            let seed = plan.engine.seed_for_choice(offset);
            request.with_id_and_seed(state.engine.next_request_id(), seed)
        };
        // Dropping the runs already started aborts them if a later one is refused.
        let stream = state.engine.submit(choice)?;
        runs.push(ChoiceRun::new(
            first_index + offset,
            stream,
            context.clone(),
            slot,
            submission,
            prompt.clone(),
        ));
    }
    Ok(runs)
}
