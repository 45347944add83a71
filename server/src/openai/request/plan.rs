//! A request's plan: its checked fields ([`CheckedFields`]) and what the server resolved for it
//! ([`Resolved`]: the model or adapter, the grammar, the banned words' ids) become, in one
//! constructor, the engine's side of every choice, how each choice's tokens become text, and how
//! the reply is written. A plan is never changed after it is built; the endpoints' own plans
//! (`chat_plan.rs`, completions') hold one.

use std::sync::Arc;

use pagoda_engine::{
    EngineRequest, LoraAdapter, RequestId, SamplingParams, StopConditions, ThinkingBudget,
    TokenConstraint,
};

use crate::openai::choices::logprob::TokenNaming;
use crate::openai::error::ApiError;
use crate::openai::request::fields::CheckedFields;
use crate::openai::request::prompt_truncation::PromptTruncation;

/// What one request asks for, checked and complete.
#[derive(Debug, Clone)]
pub struct RequestPlan {
    pub engine: EnginePlan,
    pub text: TextPlan,
    pub reply: ReplyPlan,
}

/// What the engine runs for each choice of each prompt.
#[derive(Debug, Clone)]
pub struct EnginePlan {
    pub sampling: SamplingParams,
    pub stop: StopConditions,
    /// Choices per prompt (`n`).
    pub n: usize,
    pub cache_salt: Option<String>,
    /// The compiled grammar every choice's output follows (structured outputs, forced tool calls).
    pub constraint: Option<SharedConstraint>,
    /// The LoRA adapter the request's `model` selected (`None`: the base model).
    pub lora: Option<Arc<LoraAdapter>>,
    /// The prompt log-probabilities the engine computes: those asked for, and the echoed
    /// prompt's when `logprobs` is (with the larger number of alternatives).
    pub prompt_logprobs: Option<usize>,
    /// vLLM's `truncate_prompt_tokens`: how much of the prompt the model reads.
    pub truncation: Option<PromptTruncation>,
    /// Chat's `prediction` (OpenAI's Predicted Outputs) as token ids.
    pub predicted_token_ids: Option<Arc<[u32]>>,
}

/// How each choice's tokens become text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPlan {
    pub skip_special_tokens: bool,
    pub stop_strings: Vec<String>,
    /// Keep the stop string or stop token that ended a choice in its text (vLLM's
    /// `include_stop_str_in_output`).
    pub include_stop_str_in_output: bool,
    /// Every token that ends a choice when sampled: `stop_token_ids`, the model's end-of-turn
    /// ids and, unless `ignore_eos`, its EOS ids; unless `include_stop_str_in_output`, such a
    /// token adds no text.
    pub ending_token_ids: Vec<u32>,
    /// The request's own `stop_token_ids` (what `stop_reason` names; EOS and end of turn not).
    pub listed_stop_token_ids: Vec<u32>,
    /// Completions' `echo`.
    pub echo: Option<Echo>,
}

/// How the reply is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyPlan {
    /// The name responses and metrics carry: the adapter's, or the served model's.
    pub model: String,
    pub stream: bool,
    /// A usage chunk ends the stream (`stream_options.include_usage`, or the server's
    /// `--enable-force-include-usage`).
    pub include_usage: bool,
    /// vLLM's `continuous_usage_stats`: every chunk carries its choice's usage so far.
    pub continuous_usage_stats: bool,
    /// Streamed deltas go out this many tokens at a time (1 when not streamed).
    pub stream_interval: usize,
    /// vLLM's `prompt_logprobs` as asked for: alternatives per prompt token.
    pub prompt_logprobs: Option<usize>,
    /// How log-probabilities name tokens (`return_tokens_as_token_ids`).
    pub naming: TokenNaming,
    /// vLLM's `return_token_ids`: the prompt's ids are returned.
    pub return_prompt_token_ids: bool,
    /// vLLM's `return_token_ids`: each choice's generated ids are returned (not when the
    /// thinking they would show is hidden).
    pub return_generated_token_ids: bool,
}

/// What `echo` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// The prompt, then the generated text.
    PromptAndOutput,
    /// The prompt alone (`max_tokens: 0`): one token is generated and left out, as vLLM does.
    PromptOnly,
}

/// A compiled output constraint, shared by the choices of a request; equal only to itself.
#[derive(Debug, Clone)]
pub struct SharedConstraint(pub Arc<dyn TokenConstraint>);

impl PartialEq for SharedConstraint {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The model a request's `model` selected.
#[derive(Debug, Clone, Default)]
pub struct SelectedModel {
    /// The adapter (`None`: the base model).
    pub lora: Option<Arc<LoraAdapter>>,
    /// The name responses carry: the adapter's, or the first served name.
    pub name: String,
}

/// What the server resolved for a request, besides its checked fields.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    pub model: SelectedModel,
    /// vLLM's `bad_words` as token sequences.
    pub bad_words: Vec<Vec<u32>>,
    /// Chat's `thinking_token_budget`, with the reasoning tags' ids.
    pub thinking_budget: Option<ThinkingBudget>,
    pub constraint: Option<SharedConstraint>,
    /// Completions' `echo: true`.
    pub echo: bool,
    /// The output's special tokens stay in its text (a tool-call format that starts with one).
    pub keep_special_tokens: bool,
    /// vLLM's `include_reasoning: false`: the generated tokens' ids and log-probabilities,
    /// which would show the thinking, are not computed or returned (the prompt's stay).
    pub hide_reasoning: bool,
    /// Chat's `prediction` as token ids.
    pub predicted_token_ids: Option<Arc<[u32]>>,
}

impl RequestPlan {
    /// The one way to a plan: the checked fields with what the server resolved.
    pub fn new(fields: CheckedFields, resolved: Resolved) -> Self {
        let mut sampling = fields.sampling;
        let mut stop = fields.stop;
        if resolved.hide_reasoning {
            sampling.logprobs = None;
            sampling.logprob_token_ids = None;
        }
        sampling.bad_words = resolved.bad_words;
        sampling.thinking_budget = resolved.thinking_budget;
        let echo = resolved.echo.then(|| match stop.max_tokens {
            Some(0) => {
                stop.max_tokens = Some(1);
                stop.min_tokens = 0;
                Echo::PromptOnly
            }
            _ => Echo::PromptAndOutput,
        });
        let echoed_logprobs = echo.and(sampling.logprobs);
        let engine_prompt_logprobs = match (fields.prompt_logprobs, echoed_logprobs) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let engine = EnginePlan {
            sampling,
            stop,
            n: fields.n,
            cache_salt: fields.cache_salt,
            constraint: resolved.constraint,
            lora: resolved.model.lora,
            prompt_logprobs: engine_prompt_logprobs,
            truncation: fields.truncation,
            predicted_token_ids: resolved.predicted_token_ids,
        };
        let text = TextPlan {
            skip_special_tokens: fields.skip_special_tokens && !resolved.keep_special_tokens,
            stop_strings: fields.stop_strings,
            include_stop_str_in_output: fields.include_stop_str_in_output,
            ending_token_ids: fields.ending_token_ids,
            listed_stop_token_ids: fields.listed_stop_token_ids,
            echo,
        };
        let reply = ReplyPlan {
            model: resolved.model.name,
            stream: fields.stream,
            include_usage: fields.include_usage,
            continuous_usage_stats: fields.continuous_usage_stats,
            stream_interval: fields.stream_interval,
            prompt_logprobs: fields.prompt_logprobs,
            naming: TokenNaming::of(fields.tokens_as_ids),
            return_prompt_token_ids: fields.return_token_ids,
            return_generated_token_ids: fields.return_token_ids && !resolved.hide_reasoning,
        };
        Self {
            engine,
            text,
            reply,
        }
    }

    /// Alternatives of each generated token's log-probability (`None`: not asked for).
    pub fn logprobs(&self) -> Option<usize> {
        self.engine.sampling.logprobs
    }

    /// Completions' `echo` with `max_tokens: 0`: the generated token is left out.
    pub fn echoes_prompt_only(&self) -> bool {
        self.text.echo == Some(Echo::PromptOnly)
    }
}

impl EnginePlan {
    /// The prompt as the model reads it (`truncate_prompt_tokens`).
    pub fn truncated_prompt(
        &self,
        prompt: Vec<u32>,
        max_model_len: usize,
    ) -> Result<Vec<u32>, ApiError> {
        match self.truncation {
            Some(truncation) => truncation.apply(prompt, max_model_len),
            None => Ok(prompt),
        }
    }

    /// The engine request of choice 0 for one prompt (to be validated by the engine).
    pub fn engine_request(&self, id: RequestId, prompt: Vec<u32>) -> EngineRequest {
        let mut request = EngineRequest::new(id, prompt, self.sampling.clone(), self.stop.clone());
        request.cache_salt = self.cache_salt.clone();
        request.constraint = self.constraint.as_ref().map(|c| Arc::clone(&c.0));
        request.lora = self.lora.clone();
        request.prompt_logprobs = self.prompt_logprobs;
        request.predicted_token_ids = self.predicted_token_ids.clone();
        request
    }

    /// The seed of choice `index`: a given seed is offset per choice, so that choices differ
    /// yet the whole response is reproducible.
    pub fn seed_for_choice(&self, index: usize) -> Option<u64> {
        self.sampling
            .seed
            .map(|seed| seed.wrapping_add(index as u64))
    }
}

#[cfg(test)]
mod tests;
