//! `adapter_config.json` as PEFT's `save_pretrained` writes it: the fields a LoRA adapter is
//! served by (`r`, `lora_alpha`, `use_rslora`, the target modules) and the ones that would change
//! its arithmetic in ways we do not implement, refused by name.

use serde::Deserialize;
use serde_json::Value;

use crate::models::config::ModelConfig;

/// The projections an adapter may target, by their Hugging Face module names: a checkpoint
/// has either q/k/v and gate/up, or (Phi-3) the fused `qkv_proj` and `gate_up_proj`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LoraTarget {
    Q,
    K,
    V,
    /// Phi-3's `qkv_proj`: q, k and v stacked along the outputs.
    Qkv,
    O,
    Gate,
    Up,
    /// Phi-3's `gate_up_proj`: gate then up along the outputs.
    GateUp,
    Down,
}

impl LoraTarget {
    /// The targets of a checkpoint with separate projections (Llama's layout).
    pub const SEPARATE: [LoraTarget; 7] = [
        LoraTarget::Q,
        LoraTarget::K,
        LoraTarget::V,
        LoraTarget::O,
        LoraTarget::Gate,
        LoraTarget::Up,
        LoraTarget::Down,
    ];
    /// The targets of a checkpoint with fused projections (Phi-3's layout).
    pub const FUSED: [LoraTarget; 4] = [
        LoraTarget::Qkv,
        LoraTarget::O,
        LoraTarget::GateUp,
        LoraTarget::Down,
    ];
    const ALL: [LoraTarget; 9] = [
        LoraTarget::Q,
        LoraTarget::K,
        LoraTarget::V,
        LoraTarget::Qkv,
        LoraTarget::O,
        LoraTarget::Gate,
        LoraTarget::Up,
        LoraTarget::GateUp,
        LoraTarget::Down,
    ];

    /// The targets `model`'s checkpoint layout has.
    pub fn of_model(model: &ModelConfig) -> &'static [LoraTarget] {
        if model.features.fused_projections {
            &Self::FUSED
        } else {
            &Self::SEPARATE
        }
    }

    /// The module name PEFT uses (`q_proj`, …, `down_proj`).
    pub fn module_name(self) -> &'static str {
        match self {
            LoraTarget::Q => "q_proj",
            LoraTarget::K => "k_proj",
            LoraTarget::V => "v_proj",
            LoraTarget::Qkv => "qkv_proj",
            LoraTarget::O => "o_proj",
            LoraTarget::Gate => "gate_proj",
            LoraTarget::Up => "up_proj",
            LoraTarget::GateUp => "gate_up_proj",
            LoraTarget::Down => "down_proj",
        }
    }

    /// The parent module in a decoder layer (`self_attn` or `mlp`).
    pub fn parent_name(self) -> &'static str {
        match self {
            LoraTarget::Q | LoraTarget::K | LoraTarget::V | LoraTarget::Qkv | LoraTarget::O => {
                "self_attn"
            }
            LoraTarget::Gate | LoraTarget::Up | LoraTarget::GateUp | LoraTarget::Down => "mlp",
        }
    }

    /// `[out, in]` of the base weight this target adapts in `model`.
    pub fn base_shape(self, model: &ModelConfig) -> (usize, usize) {
        let q_dim = model.num_heads * model.head_dim;
        let kv_dim = model.num_kv_heads * model.head_dim;
        let (h, i) = (model.hidden_size, model.intermediate_size);
        match self {
            LoraTarget::Q => (q_dim, h),
            LoraTarget::K | LoraTarget::V => (kv_dim, h),
            LoraTarget::Qkv => (q_dim + 2 * kv_dim, h),
            LoraTarget::O => (h, q_dim),
            LoraTarget::Gate | LoraTarget::Up => (i, h),
            LoraTarget::GateUp => (2 * i, h),
            LoraTarget::Down => (h, i),
        }
    }

    pub fn from_module_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.module_name() == name)
    }

    /// The module names of `targets`, for messages (`q_proj, k_proj, …`).
    pub fn names(targets: &[LoraTarget]) -> String {
        let names: Vec<&str> = targets.iter().map(|t| t.module_name()).collect();
        names.join(", ")
    }
}

/// The fields of `adapter_config.json` we read; unknown fields are ignored, as PEFT adds new ones.
#[derive(Debug, Clone, Deserialize)]
struct RawAdapterConfig {
    #[serde(default)]
    peft_type: Option<String>,
    r: usize,
    #[serde(default = "default_alpha")]
    lora_alpha: f64,
    #[serde(default)]
    use_rslora: bool,
    #[serde(default)]
    use_dora: bool,
    #[serde(default)]
    target_modules: Option<Value>,
    #[serde(default)]
    modules_to_save: Option<Value>,
    #[serde(default)]
    bias: Option<String>,
    #[serde(default)]
    fan_in_fan_out: bool,
    #[serde(default)]
    rank_pattern: Option<Value>,
    #[serde(default)]
    alpha_pattern: Option<Value>,
    #[serde(default)]
    base_model_name_or_path: Option<String>,
    #[serde(default)]
    target_parameters: Option<Value>,
    #[serde(default)]
    lora_bias: bool,
    #[serde(default)]
    trainable_token_indices: Option<Value>,
    #[serde(default)]
    layer_replication: Option<Value>,
    #[serde(default)]
    use_qalora: bool,
}

/// PEFT's default `lora_alpha`.
fn default_alpha() -> f64 {
    8.0
}

/// A checked adapter configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterConfig {
    pub rank: usize,
    /// What `B·A` is multiplied by: `lora_alpha / r`, or `lora_alpha / √r` with `use_rslora`.
    pub scale: f64,
    /// The base model the adapter was trained on, as the file says (informational).
    pub base_model_name_or_path: Option<String>,
}

impl AdapterConfig {
    /// Parses and checks `adapter_config.json`'s text; `max_rank` is `--max-lora-rank`.
    /// Errors name the field at fault.
    pub fn parse(text: &str, max_rank: usize) -> Result<Self, String> {
        let raw: RawAdapterConfig = serde_json::from_str(text)
            .map_err(|e| format!("adapter_config.json is not a LoRA configuration: {e}"))?;
        if let Some(kind) = raw.peft_type.as_deref() {
            if !kind.eq_ignore_ascii_case("lora") {
                return Err(format!(
                    "`peft_type` is {kind:?}; only LORA adapters are served"
                ));
            }
        }
        if raw.r == 0 {
            return Err("`r` must be at least 1".into());
        }
        if raw.r > max_rank {
            return Err(format!(
                "`r` is {}, above --max-lora-rank {max_rank}",
                raw.r
            ));
        }
        if !(raw.lora_alpha.is_finite() && raw.lora_alpha > 0.0) {
            return Err(format!(
                "`lora_alpha` must be positive, got {}",
                raw.lora_alpha
            ));
        }
        refuse_unsupported(&raw)?;
        let scale = if raw.use_rslora {
            raw.lora_alpha / (raw.r as f64).sqrt()
        } else {
            raw.lora_alpha / raw.r as f64
        };
        Ok(Self {
            rank: raw.r,
            scale,
            base_model_name_or_path: raw.base_model_name_or_path,
        })
    }
}

/// Fields that would change the adapter's arithmetic in ways not implemented.
fn refuse_unsupported(raw: &RawAdapterConfig) -> Result<(), String> {
    if raw.use_dora {
        return Err("`use_dora` is true: DoRA adapters are not supported".into());
    }
    if is_non_empty(raw.modules_to_save.as_ref()) {
        return Err(
            "`modules_to_save` is set: adapters that replace whole modules are not supported"
                .into(),
        );
    }
    if let Some(bias) = raw.bias.as_deref() {
        if bias != "none" {
            return Err(format!(
                "`bias` is {bias:?}: adapters with trained biases are not supported"
            ));
        }
    }
    if is_non_empty(raw.target_parameters.as_ref()) {
        return Err(
            "`target_parameters` is set: adapters on raw parameters (MoE experts) are not supported"
                .into(),
        );
    }
    for (field, set, what) in [
        ("lora_bias", raw.lora_bias, "a trained bias on lora_B"),
        ("use_qalora", raw.use_qalora, "QA-LoRA's pooled inputs"),
    ] {
        if set {
            return Err(format!("`{field}` is true ({what}): not supported"));
        }
    }
    for (field, value, what) in [
        (
            "trainable_token_indices",
            &raw.trainable_token_indices,
            "trained embedding rows",
        ),
        (
            "layer_replication",
            &raw.layer_replication,
            "replicated layers",
        ),
    ] {
        if is_non_empty(value.as_ref()) {
            return Err(format!("`{field}` is set ({what}): not supported"));
        }
    }
    if raw.fan_in_fan_out {
        return Err("`fan_in_fan_out` is true: only Linear (not Conv1D) layers are served".into());
    }
    for (field, value) in [
        ("rank_pattern", &raw.rank_pattern),
        ("alpha_pattern", &raw.alpha_pattern),
    ] {
        if is_non_empty(value.as_ref()) {
            return Err(format!(
                "`{field}` is set: per-module ranks and alphas are not supported"
            ));
        }
    }
    if let Some(Value::Array(names)) = &raw.target_modules {
        for name in names {
            let name = name.as_str().unwrap_or_default();
            if LoraTarget::from_module_name(name).is_none() {
                return Err(format!(
                    "`target_modules` names {name:?}; supported targets are {} (or, on a \
                     Phi-3 base, {})",
                    LoraTarget::names(&LoraTarget::SEPARATE),
                    LoraTarget::names(&LoraTarget::FUSED)
                ));
            }
        }
    }
    Ok(())
}

fn is_non_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::String(text)) => !text.is_empty(),
        Some(_) => true,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(extra: &str) -> String {
        format!(
            r#"{{"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]{extra}}}"#
        )
    }

    #[test]
    fn scale_follows_alpha_rank_and_rslora() {
        let plain = AdapterConfig::parse(&config(""), 16).unwrap();
        assert_eq!(plain.rank, 8);
        assert_eq!(plain.scale, 2.0);
        let rs = AdapterConfig::parse(&config(r#", "use_rslora": true"#), 16).unwrap();
        assert!((rs.scale - 16.0 / 8f64.sqrt()).abs() < 1e-12);
        let defaults = AdapterConfig::parse(r#"{"r": 4}"#, 16).unwrap();
        assert_eq!(defaults.scale, 2.0, "PEFT's default lora_alpha is 8");
    }

    #[test]
    fn unsupported_fields_are_refused_by_name() {
        let cases = [
            (r#", "use_dora": true"#, "use_dora"),
            (r#", "modules_to_save": ["lm_head"]"#, "modules_to_save"),
            (r#", "bias": "all""#, "bias"),
            (r#", "fan_in_fan_out": true"#, "fan_in_fan_out"),
            (r#", "rank_pattern": {"q_proj": 4}"#, "rank_pattern"),
            (r#", "alpha_pattern": {"q_proj": 4}"#, "alpha_pattern"),
            (
                r#", "target_parameters": ["mlp.experts.gate_up_proj"]"#,
                "target_parameters",
            ),
            (r#", "lora_bias": true"#, "lora_bias"),
            (r#", "use_qalora": true"#, "use_qalora"),
            (
                r#", "trainable_token_indices": [5, 9]"#,
                "trainable_token_indices",
            ),
            (r#", "layer_replication": [[0, 2]]"#, "layer_replication"),
        ];
        for (extra, field) in cases {
            let error = AdapterConfig::parse(&config(extra), 16).unwrap_err();
            assert!(error.contains(field), "{error}");
        }
        let embedding = r#"{"r": 8, "target_modules": ["embed_tokens", "q_proj"]}"#;
        let error = AdapterConfig::parse(embedding, 16).unwrap_err();
        assert!(error.contains("embed_tokens"), "{error}");
        let error = AdapterConfig::parse(&config(""), 4).unwrap_err();
        assert!(error.contains("--max-lora-rank 4"), "{error}");
        let error = AdapterConfig::parse(r#"{"peft_type": "IA3", "r": 8}"#, 16).unwrap_err();
        assert!(error.contains("peft_type"), "{error}");
        assert!(AdapterConfig::parse("not json", 16).is_err());
        let empty_lists =
            r#"{"r": 2, "modules_to_save": null, "rank_pattern": {}, "bias": "none"}"#;
        assert!(AdapterConfig::parse(empty_lists, 16).is_ok());
    }
}
