//! Hugging Face `config.json` → `ModelConfig`: the fields every family shares are read here, the
//! family's own through the registry (`families/`), which also names the supported architectures.

use std::path::Path;

use serde::Deserialize;

use super::config::RopeScaling;
use crate::error::{EngineError, ErrorSource, Result};

/// The fields of config.json we read; unknown fields are ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct HfConfig {
    #[serde(default)]
    pub architectures: Vec<String>,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: Option<usize>,
    pub head_dim: Option<usize>,
    #[serde(default = "default_rms_norm_eps")]
    pub rms_norm_eps: f64,
    pub rope_theta: Option<f32>,
    pub rope_scaling: Option<serde_json::Value>,
    /// transformers 5's form of both: `{"rope_theta", "rope_type", "factor", …}`.
    pub rope_parameters: Option<serde_json::Value>,
    pub max_position_embeddings: usize,
    #[serde(default)]
    pub tie_word_embeddings: bool,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<serde_json::Value>,
    /// `torch_dtype` (older transformers) or `dtype` (newer).
    pub torch_dtype: Option<String>,
    pub dtype: Option<String>,
    /// The whole document, for the fields only some families have.
    #[serde(skip)]
    pub raw: serde_json::Value,
}

fn default_rms_norm_eps() -> f64 {
    1e-6
}

/// RoPE's base when config.json gives none (transformers' default).
const DEFAULT_ROPE_THETA: f32 = 10_000.0;


impl HfConfig {
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            EngineError::model_load_from(format_args!("{}: cannot read", path.display()), e)
        })?;
        let deserializer = &mut serde_json::Deserializer::from_str(&text);
        let typed: std::result::Result<Self, _> = serde_path_to_error::deserialize(deserializer);
        typed.map(|config| Self {
            raw: serde_json::from_str(&text).unwrap_or_default(),
            ..config
        }).map_err(|e| {
            let field = e.path().to_string();
            let error = e.into_inner();
            let message = match field.as_str() {
                "." | "" => format!("{}: not a valid model config", path.display()),
                _ => format!(
                    "{}: not a valid model config (field `{field}`)",
                    path.display()
                ),
            };
            EngineError::ModelLoad {
                message,
                source: Some(ErrorSource::new(error)),
            }
        })
    }

    /// A field of config.json that only some families have: `None` when absent or null.
    pub fn field(&self, name: &str) -> Option<&serde_json::Value> {
        self.raw.get(name).filter(|v| !v.is_null())
    }

    /// A field read by `convert`, or an error naming it and what it must be (`what`).
    fn typed_field<'a, T>(
        &'a self,
        name: &str,
        what: &str,
        convert: impl FnOnce(&'a serde_json::Value) -> Option<T>,
    ) -> std::result::Result<Option<T>, String> {
        match self.field(name) {
            None => Ok(None),
            Some(v) => convert(v)
                .map(Some)
                .ok_or(format!("`{name}` must be {what}, not {v}")),
        }
    }

    /// A numeric field, or an error naming it when it is not a number.
    pub fn f32_field(&self, name: &str) -> std::result::Result<Option<f32>, String> {
        self.typed_field(name, "a number", |v| v.as_f64().map(|x| x as f32))
    }

    /// A non-negative integer field, or an error naming it.
    pub fn usize_field(&self, name: &str) -> std::result::Result<Option<usize>, String> {
        self.typed_field(name, "a non-negative integer", |v| v.as_u64().map(|x| x as usize))
    }

    /// A boolean field, or an error naming it.
    pub fn bool_field(&self, name: &str) -> std::result::Result<Option<bool>, String> {
        self.typed_field(name, "true or false", serde_json::Value::as_bool)
    }

    /// A string field, or an error naming it.
    pub fn str_field(&self, name: &str) -> std::result::Result<Option<&str>, String> {
        self.typed_field(name, "a string", serde_json::Value::as_str)
    }

    /// RoPE's base: `rope_theta`, or transformers 5's `rope_parameters.rope_theta`.
    pub fn rope_theta(&self) -> f32 {
        let nested = self
            .global_rope_parameters()
            .and_then(|p| p.get("rope_theta"))
            .and_then(serde_json::Value::as_f64);
        self.rope_theta
            .or(nested.map(|theta| theta as f32))
            .unwrap_or(DEFAULT_ROPE_THETA)
    }

    /// RoPE's scaling: `rope_scaling`, or transformers 5's `rope_parameters` (same fields).
    pub fn rope_scaling_fields(&self) -> Option<&serde_json::Value> {
        fn given(value: &Option<serde_json::Value>) -> Option<&serde_json::Value> {
            value.as_ref().filter(|v| !v.is_null())
        }
        given(&self.rope_scaling).or(self.global_rope_parameters())
    }

    /// transformers 5's `rope_parameters`; for models whose layer types differ in RoPE (Gemma 3:
    /// `{"full_attention": {…}, "sliding_attention": {…}}`) the global layers' entry.
    fn global_rope_parameters(&self) -> Option<&serde_json::Value> {
        let parameters = self.rope_parameters.as_ref().filter(|v| !v.is_null())?;
        Some(parameters.get("full_attention").unwrap_or(parameters))
    }

    /// The dtype the checkpoint was saved in, as config.json states it.
    pub fn saved_dtype(&self) -> Option<&str> {
        self.dtype.as_deref().or(self.torch_dtype.as_deref())
    }

    /// RoPE scaling as one of the variants we implement; another is refused by name.
    pub fn rope_scaling(&self) -> std::result::Result<Option<RopeScaling>, String> {
        parse_rope_scaling(self.rope_scaling_fields(), self)
    }
}

/// `rope_scaling` (or `rope_parameters`) as one of the variants we implement; any other type
/// is refused by name.
fn parse_rope_scaling(
    value: Option<&serde_json::Value>,
    config: &HfConfig,
) -> std::result::Result<Option<RopeScaling>, String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let kind = value
        .get("rope_type")
        .or_else(|| value.get("type"))
        .and_then(|v| v.as_str())
        .unwrap_or("default");
    let optional = |key: &str| value.get(key).and_then(|v| v.as_f64()).map(|v| v as f32);
    let number = |key: &str| -> std::result::Result<f32, String> {
        optional(key).ok_or(format!("rope_scaling.{key} is missing"))
    };
    match kind {
        "default" => Ok(None),
        "linear" => Ok(Some(RopeScaling::Linear {
            factor: number("factor")?,
        })),
        "dynamic" => Ok(Some(RopeScaling::Dynamic {
            factor: number("factor")?,
        })),
        "llama3" => Ok(Some(RopeScaling::Llama3 {
            factor: number("factor")?,
            low_freq_factor: number("low_freq_factor")?,
            high_freq_factor: number("high_freq_factor")?,
            original_max_position_embeddings: number("original_max_position_embeddings")? as usize,
        })),
        "yarn" => yarn_scaling(value, config).map(Some),
        "longrope" => longrope_scaling(value, config).map(Some),
        other => Err(format!(
            "rope_scaling type `{other}` is not supported (supported: linear, dynamic, llama3, yarn, longrope)"
        )),
    }
}

/// YaRN as transformers reads it: `factor` (or the ratio of the served context to the original
/// one), the attention factor 0.1·ln(factor) + 1 (DeepSeek's `mscale` ratio when both are given)
/// unless `attention_factor` is.
fn yarn_scaling(
    value: &serde_json::Value,
    config: &HfConfig,
) -> std::result::Result<RopeScaling, String> {
    let optional = |key: &str| value.get(key).and_then(|v| v.as_f64()).map(|v| v as f32);
    let original = optional("original_max_position_embeddings")
        .map_or(config.max_position_embeddings, |o| o as usize);
    let factor = match optional("factor") {
        Some(factor) => factor,
        None => config.max_position_embeddings as f32 / original.max(1) as f32,
    };
    let mscale = |scale: f32| if factor <= 1.0 { 1.0 } else { 0.1 * scale * factor.ln() + 1.0 };
    let default_attention = match (optional("mscale"), optional("mscale_all_dim")) {
        (Some(m), Some(all)) if m != 0.0 && all != 0.0 => mscale(m) / mscale(all),
        _ => mscale(1.0),
    };
    Ok(RopeScaling::Yarn {
        factor,
        original_max_position_embeddings: original,
        beta_fast: optional("beta_fast").unwrap_or(32.0),
        beta_slow: optional("beta_slow").unwrap_or(1.0),
        attention_factor: optional("attention_factor").unwrap_or(default_attention),
        truncate: value.get("truncate").and_then(|v| v.as_bool()).unwrap_or(true),
    })
}

/// LongRoPE as transformers reads it (Phi-3): the original context from config.json's top
/// level (or the scaling's), the attention factor √(1 + ln(factor) / ln(original)) unless given.
fn longrope_scaling(
    value: &serde_json::Value,
    config: &HfConfig,
) -> std::result::Result<RopeScaling, String> {
    let factors = |key: &str| -> std::result::Result<Vec<f32>, String> {
        value
            .get(key)
            .and_then(|v| v.as_array())
            .and_then(|values| values.iter().map(|v| v.as_f64().map(|x| x as f32)).collect())
            .ok_or(format!("rope_scaling.{key} must be a list of numbers"))
    };
    let original = config
        .usize_field("original_max_position_embeddings")?
        .or_else(|| {
            value
                .get("original_max_position_embeddings")
                .and_then(|v| v.as_u64())
                .map(|v| v as usize)
        })
        .ok_or("longrope needs `original_max_position_embeddings`")?;
    let factor = config.max_position_embeddings as f32 / original as f32;
    let default_attention = if factor <= 1.0 {
        1.0
    } else {
        (1.0 + factor.ln() / (original as f32).ln()).sqrt()
    };
    let attention_factor = value
        .get("attention_factor")
        .and_then(|v| v.as_f64())
        .map_or(default_attention, |v| v as f32);
    Ok(RopeScaling::LongRope {
        short_factor: factors("short_factor")?,
        long_factor: factors("long_factor")?,
        original_max_position_embeddings: original,
        attention_factor,
    })
}
