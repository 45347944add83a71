//! Hugging Face model directories: `config.json`, `*.safetensors` (single or sharded with
//! `model.safetensors.index.json`, memory-mapped), `generation_config.json`. Weights of any of
//! f32, f16 and bf16 are converted to the engine's weight format at load.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};

use super::config::ModelConfig;
use super::generation_config::read_generation_config;
use super::architecture::{hf_family, hf_model_config};
use super::families::{hf_stacked_experts, hf_tensor_name, FamilySpec};
use super::hf_config::HfConfig;
use super::linear::Linear;
use super::weight_format::WeightFormat;
use super::stacked_experts;
use super::weights::{
    dense_embedding_and_tied_head, file_embedding_and_tied_head, per_expert_biases,
    per_expert_linears, WeightSource,
};
use crate::error::{EngineError, Result};

/// An open Hugging Face model directory.
pub struct HfDirectory {
    dir: PathBuf,
    config: HfConfig,
    family: &'static FamilySpec,
    tensors: MmapedSafetensors,
    weight_format: WeightFormat,
    device: Device,
    dtype: DType,
}


/// The safetensors files of a directory: the shards its index names, or `model.safetensors`.
fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let index = dir.join("model.safetensors.index.json");
    if index.exists() {
        let text = std::fs::read_to_string(&index)
            .map_err(|e| EngineError::model_load_at_from(&index, "cannot read", e))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| EngineError::model_load_at_from(&index, "not valid JSON", e))?;
        let map = json["weight_map"]
            .as_object()
            .ok_or_else(|| EngineError::model_load_at(&index, "`weight_map` is missing"))?;
        let shards: BTreeSet<&str> = map.values().filter_map(|v| v.as_str()).collect();
        let files: Vec<PathBuf> = shards.into_iter().map(|s| dir.join(s)).collect();
        if let Some(missing) = files.iter().find(|f| !f.exists()) {
            return Err(EngineError::model_load_at(
                &index,
                format!("shard {} is missing", missing.display()),
            ));
        }
        return Ok(files);
    }
    let single = dir.join("model.safetensors");
    if single.exists() {
        return Ok(vec![single]);
    }
    Err(EngineError::model_load_at(
        dir,
        "no model.safetensors or model.safetensors.index.json",
    ))
}

#[allow(unsafe_code)]
fn map_safetensors(files: &[PathBuf]) -> Result<MmapedSafetensors> {
    // SAFETY: the files are mapped read-only; like every server that memory-maps weights, we
    // require that nobody modifies them while the model is loaded (the weights are copied into
    // the engine's own format at load, so the map lives only during loading).
    unsafe { MmapedSafetensors::multi(files) }
        .map_err(|e| EngineError::model_load_from("cannot read safetensors", e))
}

impl std::fmt::Debug for HfDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfDirectory")
            .field("dir", &self.dir)
            .field("weight_format", &self.weight_format)
            .finish()
    }
}

impl HfDirectory {
    /// Opens a directory for the CPU (f32).
    #[cfg(feature = "testing")]
    pub fn open(dir: &Path, weight_format: WeightFormat) -> Result<Self> {
        Self::open_on(dir, weight_format, &Device::Cpu, DType::F32)
    }

    /// Opens a directory whose weights go to `device` in `dtype` (the CPU computes in f32).
    pub fn open_on(
        dir: &Path,
        weight_format: WeightFormat,
        device: &Device,
        dtype: DType,
    ) -> Result<Self> {
        let config = HfConfig::read(&dir.join("config.json"))?;
        let (_, family) = hf_family(&config, &dir.join("config.json"))?;
        let files = safetensors_files(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            config,
            family,
            tensors: map_safetensors(&files)?,
            weight_format,
            device: device.clone(),
            dtype: if device.is_cpu() { DType::F32 } else { dtype },
        })
    }

    pub fn model_config(&self) -> Result<ModelConfig> {
        read_model_config(&self.dir, &self.config)
    }

    /// The checkpoint's own dtype (`torch_dtype` in config.json), when it names one.
    #[cfg(feature = "testing")]
    pub fn saved_dtype(&self) -> Option<DType> {
        saved_dtype(&self.config)
    }

    /// The Hugging Face name of a weight the layers ask for by its GGUF name; a tied model has
    /// no output head of its own.
    fn hf_name(&self, name: &str) -> Option<String> {
        if name == "output.weight" && self.config.tie_word_embeddings {
            return None;
        }
        hf_tensor_name(self.family, name)
    }

    /// Loads a weight onto the device in the compute dtype, checking its dtype and shape.
    fn load_f32(&self, name: &str, dims: &[usize]) -> Result<Tensor> {
        let hf = self
            .hf_name(name)
            .ok_or_else(|| EngineError::model_load_at(&self.dir, format!("no weight maps to `{name}`")))?;
        let tensor = self.tensors.load(&hf, &Device::Cpu).map_err(|e| {
            EngineError::model_load_at_from(&self.dir, format_args!("cannot read tensor `{hf}`"), e)
        })?;
        if !matches!(tensor.dtype(), DType::F32 | DType::F16 | DType::BF16) {
            return Err(EngineError::model_load_at(
                &self.dir,
                format!(
                    "tensor `{hf}` has dtype {:?}; expected f32, f16 or bf16",
                    tensor.dtype()
                ),
            ));
        }
        if tensor.dims() != dims {
            return Err(EngineError::model_load_at(
                &self.dir,
                format!(
                    "tensor `{hf}` has shape {:?}, expected {dims:?}",
                    tensor.dims()
                ),
            ));
        }
        tensor
            .to_device(&self.device)
            .and_then(|t| t.to_dtype(self.dtype))
            .map_err(|e| {
                EngineError::model_load_at_from(&self.dir, format_args!("cannot convert tensor `{hf}`"), e)
            })
    }
}

impl HfDirectory {
    /// A stacked expert tensor in the layers' layout, on the device in the compute dtype.
    fn load_stacked(&self, stacked: &super::families::StackedExperts, dims: &[usize]) -> Result<Tensor> {
        let tensor = stacked_experts::load(&self.tensors, stacked, dims)
            .map_err(|message| EngineError::model_load_at(&self.dir, message))?;
        tensor
            .to_device(&self.device)
            .and_then(|t| t.to_dtype(self.dtype))
            .map_err(|e| {
                EngineError::model_load_at_from(&self.dir, format_args!("cannot convert `{}`", stacked.hf_name), e)
            })
    }
}

/// The model configuration of a directory's config.json and generation_config.json.
pub fn read_model_config(dir: &Path, config: &HfConfig) -> Result<ModelConfig> {
    let generation = read_generation_config(&dir.join("generation_config.json"));
    hf_model_config(config, &dir.join("config.json"), &generation)
}

/// The dtype config.json says the checkpoint was saved in.
pub fn saved_dtype(config: &HfConfig) -> Option<DType> {
    match config.saved_dtype()? {
        "float32" | "float" => Some(DType::F32),
        "float16" | "half" => Some(DType::F16),
        "bfloat16" => Some(DType::BF16),
        _ => None,
    }
}

impl WeightSource for HfDirectory {
    fn linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Linear> {
        let tensor = self.load_f32(name, &[out_dim, in_dim])?;
        self.weight_format
            .convert_dense(tensor, self.dtype)
            .map_err(|e| EngineError::model_load_at_from(&self.dir, format_args!("cannot convert `{name}`"), e))
    }

    fn vector(&self, name: &str, len: usize) -> Result<Tensor> {
        self.load_f32(name, &[len])
    }

    fn dense_linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Linear> {
        Ok(Linear::Candle(QMatMul::Tensor(self.load_f32(name, &[out_dim, in_dim])?)))
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Arc<QTensor>> {
        let tensor = self.load_f32(name, &[rows, cols])?;
        let matrix = QTensor::quantize(&tensor, GgmlDType::F32)
            .map_err(|e| EngineError::model_load_at_from(&self.dir, format_args!("cannot convert `{name}`"), e))?;
        Ok(Arc::new(matrix))
    }

    /// Experts one tensor each, or stacked as the family's checkpoints keep them.
    fn experts(
        &self,
        name: &str,
        num_experts: usize,
        out_dim: usize,
        in_dim: usize,
    ) -> Result<Vec<Linear>> {
        let Some(stacked) = hf_stacked_experts(self.family, name) else {
            return per_expert_linears(self, name, num_experts, (out_dim, in_dim));
        };
        let all = self.load_stacked(&stacked, &[num_experts, out_dim, in_dim])?;
        (0..num_experts)
            .map(|e| {
                let expert = all.get(e)?;
                self.weight_format
                    .convert_dense(expert, self.dtype)
                    .map_err(|e| EngineError::model_load_at_from(&self.dir, format_args!("cannot convert `{name}`"), e))
            })
            .collect()
    }

    fn expert_biases(&self, name: &str, num_experts: usize, len: usize) -> Result<Tensor> {
        match hf_stacked_experts(self.family, name) {
            Some(stacked) => self.load_stacked(&stacked, &[num_experts, len]),
            None => per_expert_biases(self, name, num_experts, len),
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.hf_name(name)
            .is_some_and(|hf| self.tensors.get(&hf).is_ok())
    }

    fn weight_format(&self) -> WeightFormat {
        self.weight_format
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    /// On a GPU the table stays dense in the compute dtype and a tied head shares it.
    fn embedding_and_tied_head(
        &self,
        vocab_size: usize,
        hidden_size: usize,
    ) -> Result<(QMatMul, Option<Linear>)> {
        if self.device.is_cpu() {
            return file_embedding_and_tied_head(self, vocab_size, hidden_size);
        }
        let table = self.load_f32("token_embd.weight", &[vocab_size, hidden_size])?;
        Ok(dense_embedding_and_tied_head(table, self.ties_embeddings()))
    }

    /// config.json decides: an untied model must bring its own `lm_head.weight`.
    fn ties_embeddings(&self) -> bool {
        self.config.tie_word_embeddings
    }
}
