//! Hugging Face `config.json` → `ModelConfig`, for the Llama, Mistral, Qwen2 and Qwen3 families.

use std::path::Path;

use serde::Deserialize;

use super::config::{ModelConfig, RopeScaling};
use super::eos_ids::eos_ids;
use super::generation_config::GenerationConfig;
use crate::error::{EngineError, ErrorSource, Result};

/// Architectures (`architectures[0]` of config.json) we serve.
pub const SUPPORTED_HF_ARCHITECTURES: &[&str] = &[
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
];

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
    pub attention_bias: Option<bool>,
    pub sliding_window: Option<usize>,
    pub use_sliding_window: Option<bool>,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<serde_json::Value>,
    /// `torch_dtype` (older transformers) or `dtype` (newer).
    pub torch_dtype: Option<String>,
    pub dtype: Option<String>,
}

fn default_rms_norm_eps() -> f64 {
    1e-6
}

/// RoPE's base when config.json gives none (transformers' default).
const DEFAULT_ROPE_THETA: f32 = 10_000.0;

fn invalid(path: &Path, message: impl std::fmt::Display) -> EngineError {
    EngineError::model_load(format!("{}: {message}", path.display()))
}

impl HfConfig {
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            EngineError::model_load_from(format_args!("{}: cannot read", path.display()), e)
        })?;
        let deserializer = &mut serde_json::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
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

    pub fn architecture(&self, path: &Path) -> Result<&str> {
        let arch = self
            .architectures
            .first()
            .ok_or_else(|| invalid(path, "`architectures` is missing"))?;
        if !SUPPORTED_HF_ARCHITECTURES.contains(&arch.as_str()) {
            return Err(invalid(
                path,
                format!(
                    "unsupported architecture `{arch}` (supported: {})",
                    SUPPORTED_HF_ARCHITECTURES.join(", ")
                ),
            ));
        }
        Ok(arch)
    }

    /// RoPE's base: `rope_theta`, or transformers 5's `rope_parameters.rope_theta`.
    fn rope_theta(&self) -> f32 {
        let nested = self
            .rope_parameters
            .as_ref()
            .and_then(|p| p.get("rope_theta"))
            .and_then(serde_json::Value::as_f64);
        self.rope_theta
            .or(nested.map(|theta| theta as f32))
            .unwrap_or(DEFAULT_ROPE_THETA)
    }

    /// RoPE's scaling: `rope_scaling`, or transformers 5's `rope_parameters` (same fields).
    fn rope_scaling_fields(&self) -> Option<&serde_json::Value> {
        fn given(value: &Option<serde_json::Value>) -> Option<&serde_json::Value> {
            value.as_ref().filter(|v| !v.is_null())
        }
        given(&self.rope_scaling).or(given(&self.rope_parameters))
    }

    /// The dtype the checkpoint was saved in, as config.json states it.
    pub fn saved_dtype(&self) -> Option<&str> {
        self.dtype.as_deref().or(self.torch_dtype.as_deref())
    }

    /// The engine's view of this config, with generation_config.json's EOS ids and defaults.
    pub fn to_model_config(
        &self,
        path: &Path,
        generation: &GenerationConfig,
    ) -> Result<ModelConfig> {
        let arch = self.architecture(path)?;
        let rope_scaling = parse_rope_scaling(self.rope_scaling_fields())
            .map_err(|e| invalid(path, e))?;
        let context_length = match rope_scaling {
            Some(RopeScaling::Linear { factor } | RopeScaling::Dynamic { factor }) => {
                (self.max_position_embeddings as f32 * factor) as usize
            }
            _ => self.max_position_embeddings,
        };
        let is_qwen2 = arch == "Qwen2ForCausalLM";
        if is_qwen2 && self.use_sliding_window == Some(true) {
            return Err(invalid(
                path,
                "Qwen2 with use_sliding_window=true (per-layer windows) is not supported",
            ));
        }
        let sliding_window = match arch {
            "MistralForCausalLM" => self.sliding_window.filter(|&w| w < context_length),
            _ => None,
        };
        let num_heads = self.num_attention_heads;
        let mut eos_token_ids = eos_ids(self.eos_token_id.as_ref());
        eos_token_ids.extend_from_slice(&generation.eos_token_ids);
        eos_token_ids.sort_unstable();
        eos_token_ids.dedup();
        let config = ModelConfig {
            architecture: arch.to_string(),
            vocab_size: self.vocab_size,
            hidden_size: self.hidden_size,
            intermediate_size: self.intermediate_size,
            num_layers: self.num_hidden_layers,
            num_heads,
            num_kv_heads: self.num_key_value_heads.unwrap_or(num_heads),
            head_dim: self.head_dim.unwrap_or(self.hidden_size / num_heads.max(1)),
            rms_norm_eps: self.rms_norm_eps,
            rope_theta: self.rope_theta(),
            rope_interleaved: false,
            rope_scaling,
            context_length,
            attention_bias: is_qwen2 || self.attention_bias.unwrap_or(false),
            qk_norm: arch == "Qwen3ForCausalLM",
            sliding_window,
            bos_token_id: self.bos_token_id,
            eos_token_ids,
            sampling_defaults: generation.sampling,
        };
        config.validate().map_err(|e| e.loading(path))?;
        Ok(config)
    }
}

fn parse_rope_scaling(
    value: Option<&serde_json::Value>,
) -> std::result::Result<Option<RopeScaling>, String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let kind = value
        .get("rope_type")
        .or_else(|| value.get("type"))
        .and_then(|v| v.as_str())
        .unwrap_or("default");
    let number = |key: &str| -> std::result::Result<f32, String> {
        value
            .get(key)
            .and_then(|v| v.as_f64())
            .map(|v| v as f32)
            .ok_or(format!("rope_scaling.{key} is missing"))
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
        other => Err(format!(
            "rope_scaling type `{other}` is not supported (supported: linear, dynamic, llama3)"
        )),
    }
}
