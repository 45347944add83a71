//! Request fields → what the engine runs: sampling parameters, stop conditions, stop strings,
//! number of choices. What only the API knows (`n`, `stop`, `stream_options`, OpenAI's ranges
//! and spellings) is checked here; everything the engine runs is checked once, by the engine's
//! validation (`EngineHandle::validate`), whose errors name the field at fault too.

use pagoda_engine::models::generation_config::{SamplingDefaults, UnsetSampling};
use pagoda_engine::{RepetitionDetection, SamplingParams, StopConditions};

use crate::generation_defaults::ParamDefaults;
use crate::openai::error::ApiError;
use crate::openai::request::body::CommonFields;
use crate::openai::request::logit_bias::parse_logit_bias;
use crate::openai::request::prompt_truncation::PromptTruncation;

/// The most choices one request may ask for.
pub const MAX_N: u32 = 128;
/// The most stop strings one request may give.
pub const MAX_STOP_STRINGS: usize = 16;

/// The shared fields of a request, checked: the first half of its plan
/// ([`RequestPlan::new`](crate::openai::request::plan::RequestPlan::new) adds what the server resolves).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedFields {
    pub sampling: SamplingParams,
    pub stop: StopConditions,
    pub stop_strings: Vec<String>,
    pub n: usize,
    pub stream: bool,
    /// A usage chunk ends the stream: asked for, or forced by the server.
    pub include_usage: bool,
    /// vLLM's `stream_options.continuous_usage_stats` (with `include_usage` asked for): every
    /// chunk carries its choice's usage so far.
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
    /// vLLM's `prompt_logprobs`: each prompt token's log-probability, with this many
    /// alternatives, returned beside the choices (not with `stream`).
    pub prompt_logprobs: Option<usize>,
    /// vLLM's `return_token_ids`: the prompt's and the choices' token ids are returned.
    pub return_token_ids: bool,
    /// vLLM's `return_tokens_as_token_ids`: log-probabilities name tokens `token_id:{id}`.
    pub tokens_as_ids: bool,
    /// vLLM's `truncate_prompt_tokens`: how much of the prompt the model reads.
    pub truncation: Option<PromptTruncation>,
    /// Streamed deltas of this many tokens: the request's `stream_interval` raised to the
    /// server's `--stream-interval` (1 when not streaming).
    pub stream_interval: usize,
}

impl CheckedFields {
    /// Checks and converts the shared fields. `logprobs` is the number of alternatives asked for
    /// (`Some(0)`: only the chosen token's log-probability).
    pub fn check(
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
        let (include_usage, continuous_usage_stats) = usage_options(fields, stream, defaults)?;
        let mut ending_token_ids = stop.stop_token_ids.clone();
        if !stop.ignore_eos {
            ending_token_ids.extend(&defaults.eos_token_ids);
        }
        let prompt_logprobs = prompt_logprobs(fields, stream)?;
        let stream_interval = match stream {
            true => stream_interval(fields)?.max(defaults.stream_interval),
            false => stream_interval(fields).map(|_| 1)?,
        };
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
            prompt_logprobs,
            stream_interval,
            truncation: PromptTruncation::parse(
                fields.truncate_prompt_tokens,
                fields.truncation_side.as_deref(),
            )?,
            return_token_ids: fields.return_token_ids.unwrap_or(false),
            tokens_as_ids: fields
                .return_tokens_as_token_ids
                .unwrap_or(defaults.tokens_as_ids),
        })
    }
}

/// `stream_options`: whether a usage chunk ends the stream (asked for, or forced by the
/// server) and whether every chunk carries its usage (only when asked for); not without
/// `stream`.
fn usage_options(
    fields: &CommonFields,
    stream: bool,
    defaults: &ParamDefaults,
) -> Result<(bool, bool), ApiError> {
    let options = fields.stream_options.as_ref();
    if options.is_some() && !stream {
        return Err(ApiError::invalid(
            "stream_options",
            "`stream_options` is only allowed when `stream` is true",
        ));
    }
    let asked = options.and_then(|o| o.include_usage).unwrap_or(false);
    let continuous = asked
        && options
            .and_then(|o| o.continuous_usage_stats)
            .unwrap_or(false);
    Ok((asked || defaults.force_include_usage, continuous))
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
        // Chat's, with the reasoning tags' ids, and the words' ids need the tokenizer: the plan
        // takes both from what the server resolved (`plan::Resolved`).
        thinking_budget: None,
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

/// vLLM's `stream_interval`: at least 1, 1 when not given (ignored unless streaming).
fn stream_interval(fields: &CommonFields) -> Result<usize, ApiError> {
    match fields.stream_interval {
        None => Ok(1),
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
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
