//! What several family files share: Llama's tensor names, the activation and the refusals of
//! config fields that would change the arithmetic.

use crate::models::features::{Activation, DecoderFeatures};
use crate::models::hf_config::HfConfig;

/// The Hugging Face name of a Llama-family weight, given its GGUF name (the names the layers
/// use).
pub fn llama_tensor_name(gguf_name: &str) -> Option<String> {
    match gguf_name {
        "token_embd.weight" => return Some("model.embed_tokens.weight".into()),
        "output_norm.weight" => return Some("model.norm.weight".into()),
        "output.weight" => return Some("lm_head.weight".into()),
        _ => {}
    }
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let hf_module = match module {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf_module}.{suffix}"))
}

/// `blk.{layer}.{module}.{suffix}` → its parts.
pub fn split_layer_name(gguf_name: &str) -> Option<(usize, &str, &str)> {
    let (layer, part) = gguf_name.strip_prefix("blk.")?.split_once('.')?;
    let layer = layer.parse::<usize>().ok()?;
    let (module, suffix) = part.rsplit_once('.')?;
    Some((layer, module, suffix))
}

/// The MLP activation config.json names (`hidden_act`, or Gemma's `hidden_activation`), which
/// must be one of `supported`; `default` when neither field is given.
pub fn activation(
    config: &HfConfig,
    supported: &[Activation],
    default: Activation,
) -> Result<Activation, String> {
    for field in ["hidden_activation", "hidden_act"] {
        if let Some(name) = config.str_field(field)? {
            return match Activation::from_hf_name(name).filter(|a| supported.contains(a)) {
                Some(activation) => Ok(activation),
                None => Err(format!(
                    "`{field}` = `{name}` is not supported for {} (supported: {})",
                    config.architectures.first().map_or("this model", |a| a.as_str()),
                    supported_names(supported)
                )),
            };
        }
    }
    Ok(default)
}

fn supported_names(supported: &[Activation]) -> String {
    supported
        .iter()
        .map(|a| match a {
            Activation::Silu => "silu",
            Activation::GeluTanh => "gelu_pytorch_tanh",
            Activation::ClampedSwiglu { .. } => "swiglu_alpha/swiglu_limit",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses a config whose boolean `field` is true: a feature we do not implement.
pub fn refuse_if_true(config: &HfConfig, field: &str, what: &str) -> Result<(), String> {
    if config.bool_field(field)? == Some(true) {
        return Err(format!("`{field}: true` ({what}) is not supported"));
    }
    Ok(())
}

/// The window of a family that slides on every layer: the config's `sliding_window` when it is
/// shorter than the served context (a window as long as the context changes nothing).
pub fn window_below(config: &HfConfig, context_length: usize) -> Result<Option<usize>, String> {
    Ok(config
        .usize_field("sliding_window")?
        .filter(|&w| w < context_length))
}

/// Layer types from transformers' `layer_types` (`sliding_attention` / `full_attention`), when
/// config.json lists them; checked against the number of layers.
pub fn layer_types(config: &HfConfig) -> Result<Option<Vec<bool>>, String> {
    let Some(types) = config.field("layer_types") else {
        return Ok(None);
    };
    let types = types.as_array().ok_or("`layer_types` must be a list")?;
    if types.len() != config.num_hidden_layers {
        return Err(format!(
            "`layer_types` has {} entries for {} layers",
            types.len(),
            config.num_hidden_layers
        ));
    }
    types
        .iter()
        .map(|t| match t.as_str() {
            Some("sliding_attention") => Ok(true),
            Some("full_attention") => Ok(false),
            _ => Err(format!(
                "`layer_types` entry {t} is not supported (supported: sliding_attention, full_attention)"
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Llama's features, once config.json is known to name SwiGLU's activation (or none).
pub fn swiglu(config: &HfConfig) -> Result<DecoderFeatures, String> {
    Ok(DecoderFeatures {
        activation: activation(config, &[Activation::Silu], Activation::Silu)?,
        ..DecoderFeatures::default()
    })
}

/// Qwen's sliding window on the layers past `max_window_layers` (`use_sliding_window: true`)
/// is refused; every released checkpoint has it off.
pub fn refuse_qwen_window(config: &HfConfig) -> Result<(), String> {
    refuse_if_true(
        config,
        "use_sliding_window",
        "Qwen's sliding window on the layers past max_window_layers",
    )
}
