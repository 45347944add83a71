//! Random-weight LoRA adapters in PEFT's layout (`adapter_config.json` +
//! `adapter_model.safetensors`, `base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.
//! lora_{A,B}.weight`), and the merge `W + scale·B·A` of an adapter into Hugging Face weights,
//! computed here independently of the engine's LoRA code, for tests that compare the two.
//! (`scripts/make-lora-adapter.py` writes the same layout for users and the server's tests.)

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::lora::config::LoraTarget;
use crate::models::config::ModelConfig;

/// One module's `(layer, target)` and its factors `(A, B)`.
pub type ModuleFactors = ((usize, LoraTarget), (Tensor, Tensor));

/// What a test adapter adapts, and with which numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyLoraSpec {
    pub rank: usize,
    pub alpha: f64,
    pub use_rslora: bool,
    pub targets: Vec<LoraTarget>,
    /// Layers adapted (`None`: all).
    pub layers: Option<Vec<usize>>,
    /// Standard deviation-like bound of `B`'s values (PEFT starts `B` at zero; tests need an
    /// adapter that changes the output).
    pub b_scale: f32,
    pub seed: u64,
}

impl Default for TinyLoraSpec {
    fn default() -> Self {
        Self {
            rank: 4,
            alpha: 8.0,
            use_rslora: false,
            targets: LoraTarget::SEPARATE.to_vec(),
            layers: None,
            b_scale: 0.05,
            seed: 11,
        }
    }
}

impl TinyLoraSpec {
    pub fn scale(&self) -> f64 {
        if self.use_rslora {
            self.alpha / (self.rank as f64).sqrt()
        } else {
            self.alpha / self.rank as f64
        }
    }

    /// Every `(layer, target) → (A [r, in], B [out, r])`, f32, in Hugging Face's row order.
    pub fn factors(&self, model: &ModelConfig) -> Result<Vec<ModuleFactors>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let mut random = |rows: usize, cols: usize, bound: f32| -> Result<Tensor> {
            let values: Vec<f32> = (0..rows * cols)
                .map(|_| rng.random_range(-bound..bound))
                .collect();
            Ok(Tensor::from_vec(values, (rows, cols), &Device::Cpu)?)
        };
        let mut out = Vec::new();
        for layer in 0..model.num_layers {
            if self.layers.as_ref().is_some_and(|l| !l.contains(&layer)) {
                continue;
            }
            for &target in &self.targets {
                let (rows, cols) = target.base_shape(model);
                let a = random(self.rank, cols, 1.0 / (cols as f32).sqrt())?;
                let b = random(rows, self.rank, self.b_scale)?;
                out.push(((layer, target), (a, b)));
            }
        }
        Ok(out)
    }

    /// Writes the adapter for `model` into `dir` as PEFT's `save_pretrained` does.
    pub fn write(&self, model: &ModelConfig, dir: &Path) -> Result<()> {
        let io = |e: std::io::Error| EngineError::model_load(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(io)?;
        let targets: Vec<&str> = self.targets.iter().map(|t| t.module_name()).collect();
        let config = json!({
            "base_model_name_or_path": "tiny",
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "r": self.rank,
            "lora_alpha": self.alpha,
            "lora_dropout": 0.0,
            "use_rslora": self.use_rslora,
            "use_dora": false,
            "target_modules": targets,
            "bias": "none",
            "fan_in_fan_out": false,
            "modules_to_save": null,
            "layers_to_transform": self.layers,
            "rank_pattern": {},
            "alpha_pattern": {},
            "inference_mode": true,
        });
        let text = serde_json::to_string_pretty(&config)
            .map_err(|e| EngineError::model_load(e.to_string()))?;
        std::fs::write(dir.join("adapter_config.json"), text).map_err(io)?;
        let mut tensors = HashMap::new();
        for ((layer, target), (a, b)) in self.factors(model)? {
            let prefix = format!(
                "base_model.model.model.layers.{layer}.{}.{}",
                target.parent_name(),
                target.module_name()
            );
            tensors.insert(format!("{prefix}.lora_A.weight"), a);
            tensors.insert(format!("{prefix}.lora_B.weight"), b);
        }
        candle_core::safetensors::save(&tensors, dir.join("adapter_model.safetensors"))
            .map_err(|e| EngineError::model_load(e.to_string()))
    }

    /// Adds `scale·B·A` to the matching Hugging Face weights
    /// (`model.layers.{i}.{parent}.{module}.weight`), in f64, as PEFT's `merge_and_unload`.
    pub fn merge_into(
        &self,
        model: &ModelConfig,
        weights: &mut HashMap<String, Tensor>,
    ) -> Result<()> {
        for ((layer, target), (a, b)) in self.factors(model)? {
            let name = format!(
                "model.layers.{layer}.{}.{}.weight",
                target.parent_name(),
                target.module_name()
            );
            let base = weights
                .get(&name)
                .ok_or_else(|| EngineError::model_load(format!("no `{name}` to merge into")))?;
            let dtype = base.dtype();
            let delta = (b.to_dtype(DType::F64)?.matmul(&a.to_dtype(DType::F64)?)? * self.scale())?;
            let merged = (base.to_dtype(DType::F64)? + delta)?.to_dtype(dtype)?;
            weights.insert(name, merged);
        }
        Ok(())
    }
}

/// Writes to `out` the Hugging Face directory `base_hf` (single `model.safetensors`) with
/// `lora` merged into its weights, and its `config.json` (`out` may be `base_hf`).
pub fn write_merged_hf_dir(
    base_hf: &Path,
    lora: &TinyLoraSpec,
    config: &ModelConfig,
    out: &Path,
) -> Result<()> {
    let io = |e: std::io::Error| EngineError::model_load(format!("{}: {e}", base_hf.display()));
    let mut weights =
        candle_core::safetensors::load(base_hf.join("model.safetensors"), &Device::Cpu)?;
    lora.merge_into(config, &mut weights)?;
    let text = std::fs::read_to_string(base_hf.join("config.json")).map_err(io)?;
    let config_json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| EngineError::model_load(e.to_string()))?;
    super::tiny_hf::write_hf_dir(out, &config_json, &weights, 1)
}

/// The logits of the last token of `prompt` after one prefill of the model at `path` with the
/// adapter in `adapter_dir` on every row (f32 on the CPU).
pub fn lora_last_token_logits(
    path: &Path,
    weight_format: crate::models::WeightFormat,
    adapter_dir: &Path,
    prompt: &[u32],
) -> Result<Vec<f32>> {
    use crate::lora::load::{load_lora_adapter, LoraLoadOptions};
    let model = crate::models::load_model(path, &Device::Cpu, weight_format)?;
    let options = LoraLoadOptions {
        max_rank: 64,
        device: Device::Cpu,
        dtype: model.dtype(),
    };
    let adapter = load_lora_adapter("adapter", adapter_dir, model.config(), &options)?;
    super::gguf_to_hf::prefill_last_token_logits(model, prompt, Some(std::sync::Arc::new(adapter)))
}
