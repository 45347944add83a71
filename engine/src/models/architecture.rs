//! From a config to a `ModelConfig`: the fields every family shares are read here from a
//! config.json (`HfConfig`) or a GGUF header (`GgufFile`), the family's own by its file in the
//! registry (`families/`), and the value is built once, complete, and validated.

use std::path::Path;

use super::config::{ModelConfig, RopeScaling};
use super::families::{self, FamilySpec};
use super::generation_config::GenerationConfig;
use super::gguf::{value_to_u64, GgufFile};
use super::generation_config::eos_ids;
use super::hf_config::HfConfig;
use crate::error::{EngineError, Result};

fn invalid(path: &Path, message: impl std::fmt::Display) -> EngineError {
    EngineError::model_load(format!("{}: {message}", path.display()))
}

/// `architectures[0]` of `config` (read from `path`) and its family; an architecture no family
/// serves is refused with the list of those we serve.
pub fn hf_family<'a>(config: &'a HfConfig, path: &Path) -> Result<(&'a str, &'static FamilySpec)> {
    let arch = config
        .architectures
        .first()
        .ok_or_else(|| invalid(path, "`architectures` is missing"))?;
    let family = families::by_hf_architecture(arch).ok_or_else(|| {
        invalid(
            path,
            format!(
                "unsupported architecture `{arch}` (supported: {})",
                families::hf_architectures().join(", ")
            ),
        )
    })?;
    Ok((arch, family))
}

/// A checkpoint quantized by a method whose weights we cannot read is refused by name; MXFP4
/// experts (gpt-oss as released) are dequantized at load.
fn check_quantization(config: &HfConfig, family: &FamilySpec) -> std::result::Result<(), String> {
    let Some(quantization) = config.field("quantization_config") else {
        return Ok(());
    };
    let method = quantization
        .get("quant_method")
        .and_then(|m| m.as_str())
        .unwrap_or("unnamed");
    if method == "mxfp4" && family.hf_stacked_experts.is_some() {
        return Ok(());
    }
    Err(format!(
        "`quantization_config.quant_method` is `{method}`: quantized checkpoints are not \
         supported (supported: f32, f16 and bf16 weights, and gpt-oss's mxfp4 experts); serve \
         the unquantized checkpoint with --weight-format int8|int4, or a GGUF file"
    ))
}

/// The engine's view of a config.json, with generation_config.json's EOS ids and defaults.
pub fn hf_model_config(
    config: &HfConfig,
    path: &Path,
    generation: &GenerationConfig,
) -> Result<ModelConfig> {
    let (arch, family) = hf_family(config, path)?;
    check_quantization(config, family).map_err(|e| invalid(path, e))?;
    tracing::debug!(family = family.name, architecture = arch, "reading config.json");
    let num_heads = config.num_attention_heads;
    let head_dim = config
        .head_dim
        .unwrap_or(config.hidden_size / num_heads.max(1));
    let rope_scaling = config.rope_scaling().map_err(|e| invalid(path, e))?;
    let context_length = match &rope_scaling {
        Some(RopeScaling::Linear { factor } | RopeScaling::Dynamic { factor }) => {
            (config.max_position_embeddings as f32 * factor) as usize
        }
        _ => config.max_position_embeddings,
    };
    let traits = (family.from_hf)(config, context_length).map_err(|e| invalid(path, e))?;
    let mut eos_token_ids = eos_ids(config.eos_token_id.as_ref());
    eos_token_ids.extend_from_slice(&generation.eos_token_ids);
    eos_token_ids.sort_unstable();
    eos_token_ids.dedup();
    let model = ModelConfig {
        architecture: arch.to_string(),
        vocab_size: config.vocab_size,
        hidden_size: config.hidden_size,
        intermediate_size: config.intermediate_size,
        num_layers: config.num_hidden_layers,
        num_heads,
        num_kv_heads: config.num_key_value_heads.unwrap_or(num_heads),
        head_dim,
        rms_norm_eps: config.rms_norm_eps,
        rope_theta: config.rope_theta(),
        rope_interleaved: false,
        rope_scaling,
        context_length,
        attention_bias: traits.attention_bias,
        qk_norm: traits.qk_norm,
        sliding_window: traits.sliding_window,
        bos_token_id: config.bos_token_id,
        eos_token_ids,
        sampling_defaults: generation.sampling,
        features: traits.features,
    };
    model.validate().map_err(|e| e.loading(path))?;
    Ok(model)
}

/// `general.architecture` of `file` and its family; one no family serves is refused with the
/// list.
pub fn gguf_family(file: &GgufFile) -> Result<(String, &'static FamilySpec)> {
    let arch = file.architecture()?;
    let family = families::by_gguf_architecture(&arch).ok_or_else(|| {
        EngineError::model_load(format!(
            "unsupported architecture `{arch}` in {} (supported: {})",
            file.path().display(),
            families::gguf_architectures().join(", ")
        ))
    })?;
    Ok((arch, family))
}

/// The model's shape, from `general.architecture` and its `<arch>.*` keys.
pub fn gguf_model_config(file: &GgufFile) -> Result<ModelConfig> {
    let (arch, family) = gguf_family(file)?;
    tracing::debug!(family = family.name, architecture = arch, "reading a GGUF header");
    let key = |suffix: &str| format!("{arch}.{suffix}");
    let hidden_size = file.required_usize(&key("embedding_length"))?;
    let num_heads = file.required_usize(&key("attention.head_count"))?;
    let head_dim = match file
        .value(&key("attention.key_length"))
        .or(file.value(&key("rope.dimension_count")))
        .and_then(value_to_u64)
    {
        Some(d) => d as usize,
        None => hidden_size / num_heads.max(1),
    };
    let num_layers = file.required_usize(&key("block_count"))?;
    let traits = (family.from_gguf)(file, num_layers)?;
    let vocab_size = match file.value(&key("vocab_size")).and_then(value_to_u64) {
        Some(v) => v as usize,
        None => file.token_embedding_rows()?,
    };
    let model = ModelConfig {
        architecture: arch.clone(),
        vocab_size,
        hidden_size,
        intermediate_size: file.required_usize(&key("feed_forward_length"))?,
        num_layers,
        num_heads,
        num_kv_heads: file
            .value(&key("attention.head_count_kv"))
            .and_then(value_to_u64)
            .map_or(num_heads, |v| v as usize),
        head_dim,
        rms_norm_eps: file
            .optional_f32(&key("attention.layer_norm_rms_epsilon"))?
            .unwrap_or(1e-5) as f64,
        rope_theta: file.optional_f32(&key("rope.freq_base"))?.unwrap_or(10_000.0),
        rope_interleaved: family.gguf_rope_interleaved,
        rope_scaling: file.rope_scaling()?,
        attention_bias: traits.attention_bias,
        qk_norm: traits.qk_norm,
        sliding_window: traits.sliding_window,
        context_length: file.required_usize(&key("context_length"))?,
        bos_token_id: file.optional_token_id("tokenizer.ggml.bos_token_id"),
        eos_token_ids: file.eos_token_ids(),
        sampling_defaults: file.generation_config().sampling,
        features: traits.features,
    };
    model.validate().map_err(|e| e.loading(file.path()))?;
    Ok(model)
}
