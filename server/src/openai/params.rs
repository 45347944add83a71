//! Request fields → what the engine runs: sampling parameters, stop conditions, stop strings,
//! number of choices. What only the API knows (`n`, `stop`, `stream_options`, OpenAI's ranges
//! and spellings) is checked here; everything the engine runs is checked once, by the engine's
//! validation (`EngineHandle::validate`), whose errors name the field at fault too.

use pagoda_engine::models::generation_config::{SamplingDefaults, UnsetSampling};
use pagoda_engine::{EngineRequest, RequestId, SamplingParams, StopConditions};

use crate::openai::error::ApiError;
use crate::openai::logit_bias::parse_logit_bias;
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
    pub skip_special_tokens: bool,
    pub cache_salt: Option<String>,
}

/// How the model's defaults and the server's end-of-turn ids apply to requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamDefaults {
    pub sampling: SamplingDefaults,
    /// Token ids that end a turn besides the model's EOS (chat templates' end-of-turn tokens).
    pub extra_stop_token_ids: Vec<u32>,
}

impl GenerationParams {
    /// Checks and converts the shared fields. `logprobs` is the number of alternatives asked for
    /// (`Some(0)`: only the chosen token's log-probability).
    pub fn from_common(
        fields: &CommonFields,
        logprobs: Option<usize>,
        defaults: &ParamDefaults,
    ) -> Result<Self, ApiError> {
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
        if fields.stream_options.is_some() && !stream {
            return Err(ApiError::invalid(
                "stream_options",
                "`stream_options` is only allowed when `stream` is true",
            ));
        }
        Ok(Self {
            sampling,
            stop,
            stop_strings,
            n,
            stream,
            include_usage,
            skip_special_tokens: fields.skip_special_tokens.unwrap_or(true),
            cache_salt: fields.cache_salt.clone(),
        })
    }

    /// The engine request of choice 0 for one prompt (to be validated by the engine).
    pub fn engine_request(&self, id: RequestId, prompt: Vec<u32>) -> EngineRequest {
        let mut request = EngineRequest::new(id, prompt, self.sampling.clone(), self.stop.clone());
        request.cache_salt = self.cache_salt.clone();
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
    let seed = match fields.seed {
        None => None,
        Some(seed) if seed >= 0 => Some(seed as u64),
        Some(seed) => {
            return Err(ApiError::invalid(
                "seed",
                format!("`seed` must be >= 0, got {seed}"),
            ))
        }
    };
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
        logit_bias: parse_logit_bias(fields.logit_bias.as_ref())?,
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
    Ok(StopConditions {
        max_tokens,
        min_tokens: fields.min_tokens.unwrap_or(0) as usize,
        stop_token_ids,
        ignore_eos,
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
mod tests {
    use pagoda_engine::validate::RequestLimits;

    use super::*;
    use crate::openai::requests::{StopField, StreamOptions};

    /// What the engine checks a request against in these tests.
    const LIMITS: RequestLimits = RequestLimits {
        vocab_size: 1000,
        max_model_len: 4096,
        kv_capacity_tokens: 4096,
    };

    /// The fields as a request handler checks them: here, then once by the engine.
    fn params(fields: CommonFields) -> Result<GenerationParams, ApiError> {
        let params = GenerationParams::from_common(&fields, None, &ParamDefaults::default())?;
        LIMITS.validate(params.engine_request(RequestId(1), vec![1, 2, 3]))?;
        Ok(params)
    }

    #[test]
    fn defaults_are_openai_and_model_defaults_fill_unset_fields() {
        let plain = params(CommonFields::default()).expect("valid");
        assert_eq!(plain.sampling.temperature, 1.0);
        assert_eq!(plain.n, 1);
        assert!(plain.skip_special_tokens);
        let defaults = ParamDefaults {
            sampling: SamplingDefaults {
                temperature: Some(0.2),
                top_p: Some(0.9),
                ..SamplingDefaults::default()
            },
            extra_stop_token_ids: vec![7],
        };
        let fields = CommonFields {
            top_p: Some(0.5),
            ..CommonFields::default()
        };
        let filled = GenerationParams::from_common(&fields, None, &defaults).expect("valid");
        assert_eq!(filled.sampling.temperature, 0.2);
        assert_eq!(filled.sampling.top_p, 0.5);
        assert_eq!(filled.stop.stop_token_ids, [7]);
    }

    #[test]
    fn the_models_max_new_tokens_applies_only_when_max_tokens_is_unset() {
        let defaults = ParamDefaults {
            sampling: SamplingDefaults {
                max_new_tokens: Some(64),
                ..SamplingDefaults::default()
            },
            ..ParamDefaults::default()
        };
        let unset = GenerationParams::from_common(&CommonFields::default(), None, &defaults);
        assert_eq!(unset.expect("valid").stop.max_tokens, Some(64));
        let fields = CommonFields {
            max_tokens: Some(5),
            ..CommonFields::default()
        };
        let set = GenerationParams::from_common(&fields, None, &defaults).expect("valid");
        assert_eq!(set.stop.max_tokens, Some(5));
        let none = params(CommonFields::default()).expect("valid");
        assert_eq!(
            none.stop.max_tokens, None,
            "no default: what the context leaves"
        );
    }

    #[test]
    fn ignore_eos_drops_the_end_of_turn_ids() {
        let defaults = ParamDefaults {
            extra_stop_token_ids: vec![7],
            ..ParamDefaults::default()
        };
        let fields = CommonFields {
            ignore_eos: Some(true),
            stop_token_ids: Some(vec![3]),
            ..CommonFields::default()
        };
        let p = GenerationParams::from_common(&fields, None, &defaults).expect("valid");
        assert_eq!(p.stop.stop_token_ids, [3]);
    }

    #[test]
    fn bad_values_name_their_field() {
        let cases = [
            (
                CommonFields {
                    n: Some(0),
                    ..Default::default()
                },
                "n",
            ),
            (
                CommonFields {
                    temperature: Some(-1.0),
                    ..Default::default()
                },
                "temperature",
            ),
            (
                CommonFields {
                    temperature: Some(2.5),
                    ..Default::default()
                },
                "temperature",
            ),
            (
                CommonFields {
                    top_p: Some(1.5),
                    ..Default::default()
                },
                "top_p",
            ),
            (
                CommonFields {
                    top_k: Some(-5),
                    ..Default::default()
                },
                "top_k",
            ),
            (
                CommonFields {
                    seed: Some(-1),
                    ..Default::default()
                },
                "seed",
            ),
            (
                CommonFields {
                    max_tokens: Some(0),
                    ..Default::default()
                },
                "max_tokens",
            ),
            (
                CommonFields {
                    presence_penalty: Some(3.0),
                    ..Default::default()
                },
                "presence_penalty",
            ),
            (
                CommonFields {
                    stop: Some(StopField::One(String::new())),
                    ..Default::default()
                },
                "stop",
            ),
            (
                CommonFields {
                    stream_options: Some(StreamOptions::default()),
                    ..Default::default()
                },
                "stream_options",
            ),
        ];
        let bad_biases = [
            serde_json::json!("x"),
            serde_json::json!([1, 2]),
            serde_json::json!(3),
            serde_json::json!({"x": 5}),
            serde_json::json!({"-1": 5}),
            serde_json::json!({"1": "5"}),
            serde_json::json!({"1": 100.5}),
            serde_json::json!({"1": -101}),
        ];
        let cases = cases.into_iter().chain(bad_biases.into_iter().map(|bias| {
            let fields = CommonFields {
                logit_bias: Some(bias),
                ..Default::default()
            };
            (fields, "logit_bias")
        }));
        for (fields, field) in cases {
            let error = params(fields).expect_err(field);
            assert_eq!(error.param.as_deref(), Some(field), "{}", error.message);
        }
    }

    #[test]
    fn logit_bias_maps_token_ids_to_biases() {
        let fields = CommonFields {
            logit_bias: Some(serde_json::json!({"7": 100, " 3 ": -100, "12": 0.5})),
            ..Default::default()
        };
        let mut bias = params(fields).expect("valid").sampling.logit_bias;
        bias.sort_by_key(|&(id, _)| id);
        assert_eq!(bias, [(3, -100.0), (7, 100.0), (12, 0.5)]);
        let none = params(CommonFields::default()).expect("valid");
        assert!(none.sampling.logit_bias.is_empty());
    }

    #[test]
    fn seeds_differ_per_choice() {
        let fields = CommonFields {
            seed: Some(41),
            n: Some(3),
            ..CommonFields::default()
        };
        let p = params(fields).expect("valid");
        assert_eq!(p.seed_for_choice(0), Some(41));
        assert_eq!(p.seed_for_choice(2), Some(43));
    }
}
