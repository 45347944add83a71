//! What the mixture-of-experts families share: the experts' Hugging Face names and the checks of
//! the fields that place experts on only some layers.

use super::shared::split_layer_name;
use crate::models::hf_config::HfConfig;

/// Qwen-MoE's names: `mlp.gate` (router), `mlp.experts.{e}.{gate,up,down}_proj`,
/// `mlp.shared_expert.*` and `mlp.shared_expert_gate`.
pub fn qwen_moe_tensor_name(gguf_name: &str) -> Option<String> {
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let hf_module = match module {
        "ffn_gate_inp" => "mlp.gate".to_string(),
        "ffn_gate_inp_shexp" => "mlp.shared_expert_gate".to_string(),
        "ffn_gate_shexp" => "mlp.shared_expert.gate_proj".to_string(),
        "ffn_up_shexp" => "mlp.shared_expert.up_proj".to_string(),
        "ffn_down_shexp" => "mlp.shared_expert.down_proj".to_string(),
        _ => {
            let (stacked, expert) = module.split_once('.')?;
            let projection = match stacked {
                "ffn_gate_exps" => "gate_proj",
                "ffn_up_exps" => "up_proj",
                "ffn_down_exps" => "down_proj",
                _ => return None,
            };
            format!("mlp.experts.{}.{projection}", expert.parse::<usize>().ok()?)
        }
    };
    Some(format!("model.layers.{layer}.{hf_module}.{suffix}"))
}

/// Experts on every layer: `decoder_sparse_step` 1 and no `mlp_only_layers` (every released
/// Qwen-MoE checkpoint); anything else is refused by name.
pub fn require_experts_on_every_layer(config: &HfConfig) -> Result<(), String> {
    if let Some(step) = config.usize_field("decoder_sparse_step")? {
        if step != 1 {
            return Err(format!(
                "`decoder_sparse_step` {step} (experts on every {step}th layer only) is not supported (supported: 1)"
            ));
        }
    }
    let dense_layers = config
        .field("mlp_only_layers")
        .and_then(|v| v.as_array())
        .map_or(0, |layers| layers.len());
    if dense_layers > 0 {
        return Err("`mlp_only_layers` (dense layers among the expert layers) is not supported".into());
    }
    Ok(())
}

/// A required positive integer field.
pub fn required(config: &HfConfig, name: &str) -> Result<usize, String> {
    match config.usize_field(name)? {
        Some(value) if value > 0 => Ok(value),
        Some(_) => Err(format!("`{name}` must be positive")),
        None => Err(format!("`{name}` is missing")),
    }
}
