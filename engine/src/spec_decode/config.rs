//! `SpeculativeConfig`: vLLM's `--speculative-config` JSON, as far as Pagoda runs it.
//!
//! ```json
//! {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
//! {"method": "draft_model", "model": "/models/small.gguf", "num_speculative_tokens": 4}
//! {"method": "ngram", "num_speculative_tokens": 5, "disable_by_batch_size": 8}
//! ```
//!
//! Unknown fields and methods are refused by name (a typo must not silently serve without
//! speculation), and so is a field of the other method.

use std::path::PathBuf;

use serde::Deserialize;

use crate::error::EngineError;

/// The most tokens proposed per step (vLLM has no fixed cap; past ~16 a step spends more on
/// rejected rows than it saves).
pub const MAX_NUM_SPECULATIVE_TOKENS: usize = 32;

/// How the engine speculates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeculativeConfig {
    pub method: SpeculativeMethod,
    /// Most tokens proposed for a sequence per step.
    pub num_speculative_tokens: usize,
    /// vLLM's `disable_by_batch_size`: a step that starts with at least this many running
    /// sequences proposes nothing (a full batch already keeps the device busy, and each proposal
    /// adds a row). `None`: proposals at every batch size.
    pub disable_by_batch_size: Option<usize>,
}

/// Where proposals come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpeculativeMethod {
    /// Prompt lookup over the sequence's own tokens (the scheduler proposes).
    Ngram(NgramConfig),
    /// A second, smaller model with the same vocabulary, decoding greedily ahead of the target
    /// (the runner proposes).
    DraftModel(DraftModelConfig),
}

impl SpeculativeMethod {
    /// vLLM's name of the method.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ngram(_) => "ngram",
            Self::DraftModel(_) => "draft_model",
        }
    }

    /// The draft model's settings, for `draft_model`.
    pub fn draft_model(&self) -> Option<&DraftModelConfig> {
        match self {
            Self::DraftModel(draft) => Some(draft),
            Self::Ngram(_) => None,
        }
    }
}

/// Prompt lookup's n-gram sizes: the longest suffix of `prompt_lookup_max` down to
/// `prompt_lookup_min` tokens that occurred earlier is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NgramConfig {
    pub prompt_lookup_min: usize,
    pub prompt_lookup_max: usize,
}

/// The draft model: a GGUF file or Hugging Face directory, loaded on the target's device in
/// its compute dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftModelConfig {
    pub model: PathBuf,
}

/// The JSON as vLLM spells it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeculativeJson {
    method: Option<String>,
    num_speculative_tokens: Option<usize>,
    prompt_lookup_min: Option<usize>,
    prompt_lookup_max: Option<usize>,
    /// vLLM's draft model (`method: draft_model`, or a model name without a method).
    model: Option<String>,
    disable_by_batch_size: Option<usize>,
}

fn fail(message: String) -> EngineError {
    EngineError::Config(format!("--speculative-config: {message}"))
}

impl SpeculativeConfig {
    /// Parses and checks `--speculative-config`.
    pub fn from_json(text: &str) -> Result<Self, EngineError> {
        let json: SpeculativeJson = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
        let method = match (json.method.as_deref(), json.model.as_deref()) {
            (Some("ngram"), Some(_)) => {
                return Err(fail("method \"ngram\" takes no \"model\"".into()))
            }
            (Some("ngram"), None) | (None, None) => SpeculativeMethod::Ngram(ngram_sizes(&json)),
            (Some("draft_model"), None) => {
                return Err(fail(
                    "method \"draft_model\" needs \"model\": the draft model's path".into(),
                ))
            }
            (Some("draft_model") | None, Some(model)) => {
                if json.prompt_lookup_min.is_some() || json.prompt_lookup_max.is_some() {
                    return Err(fail(
                        "prompt_lookup_min and prompt_lookup_max are for method \"ngram\", not \"draft_model\"".into(),
                    ));
                }
                SpeculativeMethod::DraftModel(DraftModelConfig {
                    model: PathBuf::from(model),
                })
            }
            (Some(other), _) => {
                return Err(fail(format!(
                    "method {other:?} is not supported (supported: \"ngram\", \"draft_model\")"
                )))
            }
        };
        let num_speculative_tokens = json
            .num_speculative_tokens
            .ok_or_else(|| fail("\"num_speculative_tokens\" is required".into()))?;
        let config = Self {
            method,
            num_speculative_tokens,
            disable_by_batch_size: json.disable_by_batch_size,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks the numbers.
    pub fn validate(&self) -> Result<(), EngineError> {
        let k = self.num_speculative_tokens;
        if k == 0 || k > MAX_NUM_SPECULATIVE_TOKENS {
            return Err(fail(format!(
                "num_speculative_tokens must be in 1..={MAX_NUM_SPECULATIVE_TOKENS}, got {k}"
            )));
        }
        if let Some(n) = self.disable_by_batch_size.filter(|&n| n < 2) {
            return Err(fail(format!(
                "disable_by_batch_size must be at least 2, got {n} (at {n} no step would ever \
                 speculate: leave --speculative-config out instead)"
            )));
        }
        match &self.method {
            SpeculativeMethod::Ngram(ngram)
                if ngram.prompt_lookup_min == 0
                    || ngram.prompt_lookup_min > ngram.prompt_lookup_max =>
            {
                Err(fail(format!(
                    "prompt_lookup_min ({}) must be at least 1 and at most prompt_lookup_max ({})",
                    ngram.prompt_lookup_min, ngram.prompt_lookup_max
                )))
            }
            SpeculativeMethod::DraftModel(draft) if draft.model.as_os_str().is_empty() => {
                Err(fail("\"model\" is empty".into()))
            }
            _ => Ok(()),
        }
    }
}

/// vLLM's defaults: both 5 when neither is given, else the one given for both.
fn ngram_sizes(json: &SpeculativeJson) -> NgramConfig {
    let (prompt_lookup_min, prompt_lookup_max) =
        match (json.prompt_lookup_min, json.prompt_lookup_max) {
            (None, None) => (5, 5),
            (Some(min), None) => (min, min),
            (None, Some(max)) => (max, max),
            (Some(min), Some(max)) => (min, max),
        };
    NgramConfig {
        prompt_lookup_min,
        prompt_lookup_max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        SpeculativeConfig::from_json(text)
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn vllms_ngram_json_is_read_with_its_defaults() {
        let config = SpeculativeConfig::from_json(
            r#"{"method":"ngram","num_speculative_tokens":5,"prompt_lookup_min":2,"prompt_lookup_max":4}"#,
        )
        .expect("valid");
        assert_eq!(config.num_speculative_tokens, 5);
        assert_eq!(
            config.method,
            SpeculativeMethod::Ngram(NgramConfig {
                prompt_lookup_min: 2,
                prompt_lookup_max: 4
            })
        );
        let defaults =
            SpeculativeConfig::from_json(r#"{"method":"ngram","num_speculative_tokens":3}"#)
                .expect("valid");
        assert_eq!(
            defaults.method,
            SpeculativeMethod::Ngram(NgramConfig {
                prompt_lookup_min: 5,
                prompt_lookup_max: 5
            })
        );
        let only_min = SpeculativeConfig::from_json(
            r#"{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":2}"#,
        )
        .expect("valid");
        assert_eq!(
            only_min.method,
            SpeculativeMethod::Ngram(NgramConfig {
                prompt_lookup_min: 2,
                prompt_lookup_max: 2
            })
        );
    }

    #[test]
    fn a_draft_model_is_named_by_its_path() {
        let config = SpeculativeConfig::from_json(
            r#"{"method":"draft_model","model":"/m/draft.gguf","num_speculative_tokens":4}"#,
        )
        .expect("valid");
        let draft = DraftModelConfig {
            model: PathBuf::from("/m/draft.gguf"),
        };
        assert_eq!(config.method, SpeculativeMethod::DraftModel(draft.clone()));
        assert_eq!(config.num_speculative_tokens, 4);
        // vLLM infers the method from a model without one.
        let inferred =
            SpeculativeConfig::from_json(r#"{"model":"/m/draft.gguf","num_speculative_tokens":4}"#)
                .expect("valid");
        assert_eq!(inferred.method.draft_model(), Some(&draft));
        assert_eq!(inferred.method.name(), "draft_model");
    }

    #[test]
    fn what_is_not_run_is_refused_by_name() {
        assert!(refusal(r#"{"method":"eagle","num_speculative_tokens":3}"#).contains("\"eagle\""));
        assert!(
            refusal(r#"{"method":"draft_model","num_speculative_tokens":3}"#)
                .contains("needs \"model\"")
        );
        assert!(refusal(
            r#"{"method":"draft_model","model":"x","num_speculative_tokens":3,"prompt_lookup_max":3}"#
        )
        .contains("prompt_lookup_min and prompt_lookup_max are for method \"ngram\""));
        assert!(
            refusal(r#"{"method":"ngram","model":"x","num_speculative_tokens":3}"#)
                .contains("takes no \"model\"")
        );
        assert!(
            refusal(r#"{"method":"draft_model","model":"","num_speculative_tokens":3}"#)
                .contains("empty")
        );
        assert!(
            refusal(r#"{"method":"ngram","num_speculative_tokens":3,"prompt_lookup":2}"#)
                .contains("prompt_lookup")
        );
        assert!(refusal(r#"{"method":"ngram"}"#).contains("num_speculative_tokens"));
        assert!(refusal(r#"{"method":"ngram","num_speculative_tokens":0}"#).contains("1..="));
        assert!(refusal(
            r#"{"method":"ngram","num_speculative_tokens":2,"prompt_lookup_min":4,"prompt_lookup_max":3}"#
        )
        .contains("prompt_lookup_min"));
        assert!(refusal("not json").contains("--speculative-config"));
        assert!(refusal(
            r#"{"method":"ngram","num_speculative_tokens":2,"disable_by_batch_size":1}"#
        )
        .contains("disable_by_batch_size must be at least 2, got 1"));
    }

    #[test]
    fn disable_by_batch_size_is_read_for_either_method() {
        let ngram = r#"{"method":"ngram","num_speculative_tokens":2,"disable_by_batch_size":8}"#;
        let config = SpeculativeConfig::from_json(ngram).expect("valid");
        assert_eq!(config.disable_by_batch_size, Some(8));
        let draft = r#"{"model":"/m/d.gguf","num_speculative_tokens":2,"disable_by_batch_size":4}"#;
        let config = SpeculativeConfig::from_json(draft).expect("valid");
        assert_eq!(config.disable_by_batch_size, Some(4));
        let unset = SpeculativeConfig::from_json(r#"{"num_speculative_tokens":2}"#).expect("valid");
        assert_eq!(unset.disable_by_batch_size, None);
    }
}
