//! Text completions (`/v1/completions`), full and streamed: the choices of the typed
//! `Completion` (wire/completion.rs) as OpenAI writes them.

use serde_json::Value;

use crate::openai::choices::logprob::TokenLogprob;
use crate::openai::reply::format::{DeltaParts, FinishedChoice, ResponseFormat, ResponseMeta};
use crate::openai::wire::completion::{Completion, CompletionChoice};
use crate::openai::wire::logprobs::CompletionLogprobs;
use crate::openai::wire::usage::Usage;
use crate::openai::wire::Nullable;

#[derive(Debug, Clone, PartialEq)]
pub struct CompletionFormat(pub ResponseMeta);

impl CompletionFormat {
    fn completion<C: serde::Serialize>(&self, choices: Vec<C>, usage: Nullable<Usage>) -> Value {
        let meta = &self.0;
        let completion = Completion {
            id: meta.id.clone(),
            object: "text_completion",
            created: meta.created_unix_s,
            model: meta.model.clone(),
            choices,
            usage,
        };
        serde_json::to_value(completion).expect("a completion serializes")
    }

    fn logprobs(&self, logprobs: &[TokenLogprob]) -> Option<CompletionLogprobs> {
        self.0
            .want_logprobs
            .then(|| CompletionLogprobs::of(logprobs))
    }
}

impl ResponseFormat for CompletionFormat {
    fn chunk(&self, choices: Vec<Value>, usage: Nullable<Usage>) -> Value {
        self.completion(choices, usage)
    }

    fn opening_choice(&self, _index: usize) -> Option<Value> {
        None
    }

    fn delta_choice(&self, parts: DeltaParts<'_>) -> Option<Value> {
        let choice = CompletionChoice {
            logprobs: self.logprobs(parts.logprobs),
            prompt_token_ids: parts.prompt_token_ids.map(<[u32]>::to_vec),
            token_ids: self.0.token_ids(parts.token_ids),
            ..CompletionChoice::new(parts.index, parts.text.to_string())
        };
        Some(serde_json::to_value(choice).expect("a choice serializes"))
    }

    fn final_choice(&self, index: usize, finish_reason: &str) -> Value {
        let choice = CompletionChoice {
            finish_reason: Some(finish_reason.to_string()),
            ..CompletionChoice::new(index, String::new())
        };
        serde_json::to_value(choice).expect("a choice serializes")
    }

    fn response(&self, choices: Vec<FinishedChoice>, usage: Usage) -> Value {
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
