//! Hugging Face `generation_config.json`: extra EOS ids and the model's default sampling values
//! (vLLM applies the same keys by default: temperature, top_p, top_k, min_p, repetition_penalty).

use std::path::Path;

use serde::Deserialize;

use crate::request::SamplingParams;

/// Sampling values the model's authors recommend; `None` where the file says nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct SamplingDefaults {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<usize>,
    pub min_p: Option<f32>,
    pub repetition_penalty: Option<f32>,
    /// `max_new_tokens`: the server's default `max_tokens` for chat requests that give none.
    pub max_new_tokens: Option<usize>,
}

impl SamplingDefaults {
    /// `params` with every value the model recommends, for fields the caller left unset
    /// (`unset` says which). Fields the caller set are kept.
    pub fn fill(&self, params: &mut SamplingParams, unset: UnsetSampling) {
        let take = |is_unset: bool, default: Option<f32>, value: &mut f32| {
            if is_unset {
                if let Some(default) = default {
                    *value = default;
                }
            }
        };
        take(unset.temperature, self.temperature, &mut params.temperature);
        take(unset.top_p, self.top_p, &mut params.top_p);
        take(unset.min_p, self.min_p, &mut params.min_p);
        take(
            unset.repetition_penalty,
            self.repetition_penalty,
            &mut params.repetition_penalty,
        );
        if unset.top_k {
            if let Some(top_k) = self.top_k {
                params.top_k = top_k;
            }
        }
    }
}

/// Which sampling fields a caller left to the model's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnsetSampling {
    pub temperature: bool,
    pub top_p: bool,
    pub top_k: bool,
    pub min_p: bool,
    pub repetition_penalty: bool,
}

/// What a `generation_config.json` holds for us.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerationConfig {
    pub eos_token_ids: Vec<u32>,
    pub sampling: SamplingDefaults,
}

/// Reads `path` if it exists; an unreadable file is ignored with a warning (it is optional).
pub fn read_generation_config(path: &Path) -> GenerationConfig {
    let Ok(text) = std::fs::read_to_string(path) else {
        return GenerationConfig::default();
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        tracing::warn!(path = %path.display(), "ignoring unparsable generation_config.json");
        return GenerationConfig::default();
    };
    let sampling = serde_json::from_value::<SamplingDefaults>(json.clone()).unwrap_or_else(|error| {
        tracing::warn!(path = %path.display(), %error, "ignoring the sampling values of generation_config.json");
        SamplingDefaults::default()
    });
    GenerationConfig {
        eos_token_ids: eos_ids(json.get("eos_token_id")),
        sampling,
    }
}

/// `eos_token_id` in a Hugging Face JSON file (`config.json`, `generation_config.json`), as
/// a number or a list.
pub fn eos_ids(value: Option<&serde_json::Value>) -> Vec<u32> {
    match value {
        Some(serde_json::Value::Number(n)) => {
            n.as_u64().map(|v| vec![v as u32]).unwrap_or_default()
        }
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_u64())
            .map(|v| v as u32)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_eos_ids_and_sampling_defaults() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("generation_config.json");
        assert_eq!(
            read_generation_config(&path),
            GenerationConfig::default(),
            "a missing file is empty"
        );
        std::fs::write(&path, r#"{"eos_token_id": [2, 7], "temperature": 0.6, "top_p": 0.9, "top_k": 20, "do_sample": true}"#)
            .expect("write");
        let config = read_generation_config(&path);
        assert_eq!(config.eos_token_ids, vec![2, 7]);
        assert_eq!(config.sampling.temperature, Some(0.6));
        assert_eq!(config.sampling.top_k, Some(20));
        assert_eq!(config.sampling.min_p, None);
        std::fs::write(&path, r#"{"eos_token_id": 5}"#).expect("write");
        assert_eq!(read_generation_config(&path).eos_token_ids, vec![5]);
        std::fs::write(&path, "not json").expect("write");
        assert!(read_generation_config(&path).eos_token_ids.is_empty());
    }

    #[test]
    fn defaults_fill_only_unset_fields() {
        let defaults = SamplingDefaults {
            temperature: Some(0.7),
            top_k: Some(40),
            ..Default::default()
        };
        let mut params = SamplingParams {
            temperature: 0.0,
            top_k: 5,
            ..SamplingParams::default()
        };
        defaults.fill(
            &mut params,
            UnsetSampling {
                temperature: true,
                ..Default::default()
            },
        );
        assert_eq!(params.temperature, 0.7);
        assert_eq!(params.top_k, 5, "top_k was set by the caller");
    }
}
