//! Request fields → what the engine runs: sampling parameters, stop conditions, stop strings,
//! number of choices. What only the API knows (`n`, `stop`, `stream_options`, OpenAI's ranges
//! and spellings) is checked here; everything the engine runs is checked once, by the engine's
//! validation (`EngineHandle::validate`), whose errors name the field at fault too.

use std::sync::Arc;

use pagoda_engine::models::generation_config::{SamplingDefaults, UnsetSampling};
use pagoda_engine::{
    EngineRequest, LoraAdapter, RepetitionDetection, RequestId, SamplingParams, StopConditions,
    TokenConstraint,
};

use crate::openai::error::ApiError;
use crate::openai::logit_bias::parse_logit_bias;
use crate::openai::prompt_truncation::PromptTruncation;
use crate::openai::requests::CommonFields;

/// The most choices one request may ask for.
pub const MAX_N: u32 = 128;
/// The most stop strings one request may give.
pub const MAX_STOP_STRINGS: usize = 16;

/// What a request asks the engine for, once per choice.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationParams {
    pub sampling: SamplingParams,
    pub stop: StopConditions,
    pub stop_strings: Vec<String>,
    pub n: usize,
    pub stream: bool,
    pub include_usage: bool,
    /// vLLM's `stream_options.continuous_usage_stats` (with `include_usage`): every chunk
    /// carries its choice's usage so far.
    pub continuous_usage_stats: bool,
    pub skip_special_tokens: bool,
    /// Keep the stop string or stop token that ended a choice in its text (vLLM's
    /// `include_stop_str_in_output`; by default neither is in the text).
    pub include_stop_str_in_output: bool,
    /// Every token that ends a choice when sampled: `stop.stop_token_ids` and, unless
    /// `ignore_eos`, the model's EOS ids.
    pub ending_token_ids: Vec<u32>,
    /// The request's own `stop_token_ids` (vLLM's `stop_reason` names them when they end a choice).
    pub listed_stop_token_ids: Vec<u32>,
    pub cache_salt: Option<String>,
    /// The compiled grammar every choice's output must follow (structured outputs, forced tool
    /// calls); set once compiled, after these fields were checked.
    pub constraint: Option<SharedConstraint>,
    /// The LoRA adapter the request selected by `model` (`None`: the base model).
    pub lora: Option<Arc<LoraAdapter>>,
    /// vLLM's `prompt_logprobs`: each prompt token's log-probability, with this many
    /// alternatives, returned beside the choices (not with `stream`).
    pub prompt_logprobs: Option<usize>,
    /// Completions' `echo`: the prompt comes before each choice's text.
    pub echo: Option<Echo>,
    /// vLLM's `return_token_ids`: the prompt's and the choices' token ids are returned.
    pub return_token_ids: bool,
    /// vLLM's `return_tokens_as_token_ids`: log-probabilities name tokens `token_id:{id}`.
    pub tokens_as_ids: bool,
    /// vLLM's `truncate_prompt_tokens`: how much of the prompt the model reads.
    pub truncation: Option<PromptTruncation>,
    /// vLLM's `stream_interval`: streamed deltas of this many tokens (raised to the server's
    /// `--stream-interval`).
    pub stream_interval: Option<usize>,
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

/// How the model's defaults and the server's end-of-turn ids apply to requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamDefaults {
    pub sampling: SamplingDefaults,
    /// Token ids that end a turn besides the model's EOS (chat templates' end-of-turn tokens).
    pub extra_stop_token_ids: Vec<u32>,
    /// The model's EOS ids (they end a choice unless `ignore_eos`).
    pub eos_token_ids: Vec<u32>,
    /// Log-probabilities name tokens `token_id:{id}` unless a request says otherwise
    /// (`--return-tokens-as-token-ids`).
    pub tokens_as_ids: bool,
}

impl GenerationParams {
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

    /// Checks and converts the shared fields. `logprobs` is the number of alternatives asked for
    /// (`Some(0)`: only the chosen token's log-probability).
    pub fn from_common(
        fields: &CommonFields,
        logprobs: Option<usize>,
        defaults: &ParamDefaults,
    ) -> Result<Self, ApiError> {
        fields.unsupported.check()?;
        let sampling = sampling_params(fields, logprobs, &defaults.sampling)?;
        let stop = stop_conditions(fields, defaults)?;
        let stop_strings = stop_strings(fields)?;
        let n = match fields.n {
            None => 1,
            Some(n) if (1..=MAX_N).contains(&n) => n as usize,
            Some(n) => {
                return Err(ApiError::invalid(
                    "n",
                    format!("`n` must be between 1 and {MAX_N}, got {n}"),
                ))
            }
        };
        let stream = fields.stream.unwrap_or(false);
        let include_usage = fields
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let continuous_usage_stats = include_usage
            && fields
                .stream_options
                .as_ref()
                .and_then(|o| o.continuous_usage_stats)
                .unwrap_or(false);
        if fields.stream_options.is_some() && !stream {
            return Err(ApiError::invalid(
                "stream_options",
                "`stream_options` is only allowed when `stream` is true",
            ));
        }
        let mut ending_token_ids = stop.stop_token_ids.clone();
        if !stop.ignore_eos {
            ending_token_ids.extend(&defaults.eos_token_ids);
        }
        Ok(Self {
            sampling,
            stop,
            ending_token_ids,
            listed_stop_token_ids: fields.stop_token_ids.clone().unwrap_or_default(),
            stop_strings,
            n,
            stream,
            include_usage,
            continuous_usage_stats,
            skip_special_tokens: fields.skip_special_tokens.unwrap_or(true),
            include_stop_str_in_output: fields.include_stop_str_in_output.unwrap_or(false),
            cache_salt: fields.cache_salt.clone(),
            constraint: None,
            lora: None,
            prompt_logprobs: prompt_logprobs(fields, stream)?,
            stream_interval: stream_interval(fields)?,
            truncation: PromptTruncation::parse(
                fields.truncate_prompt_tokens,
                fields.truncation_side.as_deref(),
            )?,
            echo: None,
            return_token_ids: fields.return_token_ids.unwrap_or(false),
            tokens_as_ids: fields
                .return_tokens_as_token_ids
                .unwrap_or(defaults.tokens_as_ids),
        })
    }

    /// Completions' `echo`: with `max_tokens: 0` the prompt alone.
    pub fn set_echo(&mut self) {
        self.echo = Some(match self.stop.max_tokens {
            Some(0) => {
                self.stop.max_tokens = Some(1);
                self.stop.min_tokens = 0;
                Echo::PromptOnly
            }
            _ => Echo::PromptAndOutput,
        });
    }

    /// The prompt log-probabilities the engine computes: those asked for, and the echoed
    /// prompt's when `logprobs` is (with the larger number of alternatives).
    pub fn engine_prompt_logprobs(&self) -> Option<usize> {
        let echoed = self.echo.and(self.sampling.logprobs);
        match (self.prompt_logprobs, echoed) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The engine request of choice 0 for one prompt (to be validated by the engine).
    pub fn engine_request(&self, id: RequestId, prompt: Vec<u32>) -> EngineRequest {
        let mut request = EngineRequest::new(id, prompt, self.sampling.clone(), self.stop.clone());
        request.cache_salt = self.cache_salt.clone();
        request.constraint = self.constraint.as_ref().map(|c| Arc::clone(&c.0));
        request.lora = self.lora.clone();
        request.prompt_logprobs = self.engine_prompt_logprobs();
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

fn sampling_params(
    fields: &CommonFields,
    logprobs: Option<usize>,
    defaults: &SamplingDefaults,
) -> Result<SamplingParams, ApiError> {
    let top_k = match fields.top_k {
        None | Some(-1) | Some(0) => 0,
        Some(k) if k > 0 => k as usize,
        Some(k) => {
            return Err(ApiError::invalid(
                "top_k",
                format!("`top_k` must be -1 (off) or a positive number, got {k}"),
            ))
        }
    };
    // Any 64-bit seed, as OpenAI and vLLM take (clients send -1 too): a negative one stands for
    // the u64 of the same bits, so different seeds stay different.
    let seed = fields.seed.map(|seed| seed as u64);
    let mut sampling = SamplingParams {
        temperature: fields.temperature.unwrap_or(1.0),
        top_p: fields.top_p.unwrap_or(1.0),
        top_k,
        min_p: fields.min_p.unwrap_or(0.0),
        repetition_penalty: fields.repetition_penalty.unwrap_or(1.0),
        presence_penalty: fields.presence_penalty.unwrap_or(0.0),
        frequency_penalty: fields.frequency_penalty.unwrap_or(0.0),
        seed,
        logprobs,
        logprob_token_ids: logprob_token_ids(fields, logprobs)?,
        logit_bias: parse_logit_bias(fields.logit_bias.as_ref())?,
        allowed_token_ids: fields.allowed_token_ids.clone(),
        // Chat's, with the reasoning tags' ids: `thinking_budget::thinking_budget` sets it.
        thinking_budget: None,
        // Words need the tokenizer: `bad_words::bad_words_token_ids` fills them in.
        bad_words: Vec::new(),
    };
    let unset = UnsetSampling {
        temperature: fields.temperature.is_none(),
        top_p: fields.top_p.is_none(),
        top_k: fields.top_k.is_none(),
        min_p: fields.min_p.is_none(),
        repetition_penalty: fields.repetition_penalty.is_none(),
    };
    defaults.fill(&mut sampling, unset);
    if fields.temperature.is_some_and(|t| t > 2.0) {
        return Err(ApiError::invalid(
            "temperature",
            format!(
                "`temperature` must be between 0 and 2, got {}",
                fields.temperature.unwrap_or_default()
            ),
        ));
    }
    Ok(sampling)
}

/// vLLM's `stream_interval`: at least 1 (ignored unless streaming).
fn stream_interval(fields: &CommonFields) -> Result<Option<usize>, ApiError> {
    match fields.stream_interval {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Some(n) => Err(ApiError::invalid(
            "stream_interval",
            format!("`stream_interval` must be at least 1, got {n}"),
        )),
    }
}

/// vLLM's `logprob_token_ids`: only with `logprobs` (an empty list is no list, as in vLLM).
fn logprob_token_ids(
    fields: &CommonFields,
    logprobs: Option<usize>,
) -> Result<Option<Vec<u32>>, ApiError> {
    let ids = fields
        .logprob_token_ids
        .clone()
        .filter(|ids| !ids.is_empty());
    if ids.is_some() && logprobs.is_none() {
        return Err(ApiError::invalid(
            "logprob_token_ids",
            "`logprob_token_ids` needs `logprobs` (chat: `logprobs: true`)",
        ));
    }
    Ok(ids)
}

/// The stop conditions; without `max_tokens` the model's `max_new_tokens` (generation_config.json)
/// applies, as in vLLM, else what the context leaves.
fn stop_conditions(
    fields: &CommonFields,
    defaults: &ParamDefaults,
) -> Result<StopConditions, ApiError> {
    let max_tokens = fields
        .max_tokens
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        .or(defaults.sampling.max_new_tokens);
    let extra_stop_token_ids = &defaults.extra_stop_token_ids;
    let ignore_eos = fields.ignore_eos.unwrap_or(false);
    let mut stop_token_ids = fields.stop_token_ids.clone().unwrap_or_default();
    if !ignore_eos {
        for &id in extra_stop_token_ids.iter() {
            if !stop_token_ids.contains(&id) {
                stop_token_ids.push(id);
            }
        }
    }
    let repetition = fields.repetition_detection.map(|r| RepetitionDetection {
        min_pattern_size: r.min_pattern_size,
        max_pattern_size: r.max_pattern_size,
        min_count: r.min_count,
    });
    Ok(StopConditions {
        max_tokens,
        min_tokens: fields.min_tokens.unwrap_or(0) as usize,
        stop_token_ids,
        ignore_eos,
        repetition,
    })
}

/// vLLM's `prompt_logprobs`: 0 or more alternatives (the engine caps them at `--max-logprobs`),
/// not with `stream`.
fn prompt_logprobs(fields: &CommonFields, stream: bool) -> Result<Option<usize>, ApiError> {
    let Some(n) = fields.prompt_logprobs else {
        return Ok(None);
    };
    if stream {
        return Err(ApiError::invalid(
            "prompt_logprobs",
            "`prompt_logprobs` are not available when `stream` is true",
        ));
    }
    usize::try_from(n).map(Some).map_err(|_| {
        ApiError::invalid(
            "prompt_logprobs",
            format!("`prompt_logprobs` must be at least 0, got {n}"),
        )
    })
}

fn stop_strings(fields: &CommonFields) -> Result<Vec<String>, ApiError> {
    let strings = fields
        .stop
        .clone()
        .map(|s| s.into_vec())
        .unwrap_or_default();
    if strings.len() > MAX_STOP_STRINGS {
        return Err(ApiError::invalid(
            "stop",
            format!(
                "at most {MAX_STOP_STRINGS} stop strings are allowed, got {}",
                strings.len()
            ),
        ));
    }
    if strings.iter().any(String::is_empty) {
        return Err(ApiError::invalid("stop", "stop strings must not be empty"));
    }
    Ok(strings)
}

#[cfg(test)]
mod tests;
