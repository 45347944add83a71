//! Text completions (`/v1/completions`), full and streamed: the choices of the typed
//! `Completion` (wire/completion.rs) as OpenAI writes them.

use crate::openai::choices::logprob::TokenLogprob;
use crate::openai::reply::format::{
    ChoiceEnd, DeltaParts, FinishedChoice, ResponseFormat, ResponseMeta,
};
use crate::openai::wire::completion::{Completion, CompletionChoice};
use crate::openai::wire::logprobs::CompletionLogprobs;
use crate::openai::wire::usage::Usage;
use crate::openai::wire::Nullable;

#[derive(Debug, Clone, PartialEq)]
pub struct CompletionFormat(pub ResponseMeta);

impl CompletionFormat {
    fn completion<C>(&self, choices: Vec<C>, usage: Nullable<Usage>) -> Completion<C> {
        let meta = &self.0;
        Completion {
            id: meta.id.clone(),
            object: "text_completion",
            created: meta.created_unix_s,
            model: meta.model.clone(),
            choices,
            usage,
        }
    }

    fn logprobs(&self, logprobs: &[TokenLogprob]) -> Option<CompletionLogprobs> {
        self.0
            .want_logprobs
            .then(|| CompletionLogprobs::of(logprobs))
    }
}

impl ResponseFormat for CompletionFormat {
    type StreamChoice = CompletionChoice;
    type Chunk = Completion<CompletionChoice>;
    type Whole = Completion<CompletionChoice>;

    fn chunk(&self, choices: Vec<CompletionChoice>, usage: Nullable<Usage>) -> Self::Chunk {
        self.completion(choices, usage)
    }

    fn opening_chunk(
        &self,
        _index: usize,
        _prompt_token_ids: Option<&[u32]>,
        _usage: Nullable<Usage>,
    ) -> Option<Self::Chunk> {
        None
    }

    fn delta_choice(
        &self,
        parts: DeltaParts<'_>,
        end: Option<&ChoiceEnd>,
    ) -> Option<CompletionChoice> {
        Some(CompletionChoice {
            logprobs: self.logprobs(parts.logprobs),
            finish_reason: end.map(|end| end.finish_reason.to_string()),
            stop_reason: end.map(|end| end.stop_reason.clone()),
            prompt_token_ids: parts.prompt_token_ids.map(<[u32]>::to_vec),
            token_ids: self.0.token_ids(parts.token_ids),
            ..CompletionChoice::new(parts.index, parts.text.to_string())
        })
    }

    fn final_choice(&self, index: usize, end: &ChoiceEnd) -> CompletionChoice {
        CompletionChoice {
            finish_reason: Some(end.finish_reason.to_string()),
            stop_reason: Some(end.stop_reason.clone()),
            ..CompletionChoice::new(index, String::new())
        }
    }

    fn response(&self, choices: Vec<FinishedChoice>, usage: Usage) -> Self::Whole {
        let choices = choices
            .into_iter()
            .map(|c| CompletionChoice {
                logprobs: self.logprobs(&c.logprobs),
                finish_reason: Some(c.finish_reason),
                stop_reason: Some(c.stop_reason),
                prompt_logprobs: c.prompt_logprobs,
                // vLLM's place in completions: the choice's (each prompt has its own).
                prompt_token_ids: c.prompt_token_ids.map(|ids| ids.to_vec()),
                token_ids: self.0.token_ids(&c.token_ids),
                ..CompletionChoice::new(c.index, c.text)
            })
            .collect();
        self.completion(choices, Some(Some(usage)))
    }
}
