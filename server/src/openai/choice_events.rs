//! The choices' events as one stream, and what a delta event writes: shared by the streamed and
//! the whole response.

use futures_util::stream::{self, BoxStream, StreamExt};

use crate::openai::choice::ChoiceRun;
use crate::openai::choice_event::ChoiceEvent;
use crate::openai::format::DeltaParts;

fn events_of(run: ChoiceRun) -> BoxStream<'static, ChoiceEvent> {
    stream::unfold(run, |mut run| async move {
        run.next().await.map(|event| (event, run))
    })
    .boxed()
}

/// Every choice's events, interleaved as they come.
pub fn merged(runs: Vec<ChoiceRun>) -> BoxStream<'static, ChoiceEvent> {
    stream::select_all(runs.into_iter().map(events_of)).boxed()
}

/// What a delta event writes (`None` for other events).
pub fn delta_parts(event: &ChoiceEvent) -> Option<DeltaParts<'_>> {
    match event {
        ChoiceEvent::Delta {
            index,
            text,
            logprobs,
            num_tokens,
            token_ids,
            prompt_token_ids,
            ..
        } => Some(DeltaParts {
            index: *index,
            text,
            logprobs,
            num_tokens: *num_tokens,
            token_ids,
            prompt_token_ids: prompt_token_ids.as_deref(),
        }),
        _ => None,
    }
}
