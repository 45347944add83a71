//! Reading GGUF files: metadata → `ModelConfig`, tensors → `QTensor`s.

use std::cell::RefCell;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::{DType, Device};

use super::config::RopeScaling;
use super::weight_format::WeightFormat;
use crate::error::{EngineError, Result};

/// An open GGUF file: its header is parsed, tensors are read on demand.
#[derive(Debug)]
pub struct GgufFile {
    path: PathBuf,
    content: Content,
    reader: RefCell<BufReader<File>>,
    device: Device,
    weight_format: WeightFormat,
    dtype: DType,
    /// The file's name of a weight the layers ask for by Llama's GGUF name, where its family's
    /// differs (`FamilySpec::gguf_tensor_name`).
    tensor_names: Option<fn(&str) -> Option<String>>,
}


impl GgufFile {
    pub fn open(path: &Path, device: &Device, weight_format: WeightFormat) -> Result<Self> {
        let file = File::open(path).map_err(|e| EngineError::model_load_at_from(path, "cannot open", e))?;
        let mut reader = BufReader::new(file);
        // A corrupt header can make the parser ask for absurd allocations; turn a panic into an error.
        let content =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Content::read(&mut reader)))
                .map_err(|_| EngineError::model_load_at(path, "corrupt GGUF header"))?
                .map_err(|e| {
                    EngineError::model_load_at_from(
                        path,
                        "not a valid GGUF file, or one with a tensor block type this build \
                         cannot read (such as MXFP4: convert to F16, BF16 or Q8_0)",
                        e,
                    )
                })?;
        Ok(Self {
            path: path.to_path_buf(),
            content,
            reader: RefCell::new(reader),
            device: device.clone(),
            weight_format,
            dtype: DType::F32,
            tensor_names: None,
        })
    }

    /// Reads weights by the names `rename` gives (its family's), where it gives one.
    pub fn with_tensor_names(mut self, rename: Option<fn(&str) -> Option<String>>) -> Self {
        self.tensor_names = rename;
        self
    }

    /// The file's name of the weight the layers call `name`.
    fn file_name<'a>(&self, name: &'a str) -> std::borrow::Cow<'a, str> {
        match self.tensor_names.and_then(|rename| rename(name)) {
            Some(renamed) => renamed.into(),
            None => name.into(),
        }
    }

    /// Computes in `dtype` (dense weights and vectors are converted to it at load).
    pub fn with_dtype(mut self, dtype: DType) -> Self {
        self.dtype = dtype;
        self
    }

    pub fn weight_format(&self) -> WeightFormat {
        self.weight_format
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    #[cfg(feature = "testing")]
    pub fn metadata(&self) -> &std::collections::HashMap<String, Value> {
        &self.content.metadata
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content
            .tensor_infos
            .contains_key(self.file_name(name).as_ref())
    }

    /// Reads one tensor, checking its shape (in candle's order: rows first).
    pub fn tensor(&self, name: &str, dims: &[usize]) -> Result<QTensor> {
        let name = self.file_name(name);
        let name = name.as_ref();
        let info = self
            .content
            .tensor_infos
            .get(name)
            .ok_or_else(|| EngineError::model_load_at(&self.path, format!("tensor `{name}` is missing")))?;
        if info.shape.dims() != dims {
            return Err(EngineError::model_load_at(
                &self.path,
                format!(
                    "tensor `{name}` has shape {:?}, expected {dims:?}",
                    info.shape.dims()
                ),
            ));
        }
        let mut reader = self.reader.borrow_mut();
        self.content
            .tensor(&mut *reader, name, &self.device)
            .map_err(|e| {
                EngineError::model_load_at_from(&self.path, format_args!("cannot read tensor `{name}`"), e)
            })
    }

    pub fn value(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    pub fn required_usize(&self, key: &str) -> Result<usize> {
        let value = self
            .value(key)
            .ok_or_else(|| EngineError::model_load_at(&self.path, format!("metadata `{key}` is missing")))?;
        value_to_u64(value)
            .map(|v| v as usize)
            .ok_or_else(|| EngineError::model_load_at(&self.path, format!("metadata `{key}` is not an integer")))
    }

    pub fn optional_f32(&self, key: &str) -> Result<Option<f32>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => v
                .to_f32()
                .or_else(|_| v.to_f64().map(|x| x as f32))
                .map(Some)
                .map_err(|_| EngineError::model_load_at(&self.path, format!("metadata `{key}` is not a float"))),
        }
    }

    pub fn optional_token_id(&self, key: &str) -> Option<u32> {
        self.value(key).and_then(value_to_u64).map(|v| v as u32)
    }

    /// `general.architecture`, e.g. "llama".
    pub fn architecture(&self) -> Result<String> {
        self.value("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .ok_or_else(|| EngineError::model_load_at(&self.path, "metadata `general.architecture` is missing"))
    }

    /// `<arch>.{suffix}` as an integer, when present.
    pub fn arch_usize(&self, suffix: &str) -> Result<Option<usize>> {
        let key = format!("{}.{suffix}", self.architecture()?);
        match self.value(&key) {
            None => Ok(None),
            Some(v) => value_to_u64(v).map(|v| Some(v as usize)).ok_or_else(|| {
                EngineError::model_load_at(&self.path, format!("metadata `{key}` is not an integer"))
            }),
        }
    }

    /// `<arch>.{suffix}` as a float, when present.
    pub fn arch_f32(&self, suffix: &str) -> Result<Option<f32>> {
        self.optional_f32(&format!("{}.{suffix}", self.architecture()?))
    }

    /// A 1-D f32 tensor's values (RoPE frequency factors).
    pub fn f32_values(&self, name: &str) -> Result<Vec<f32>> {
        let len = self
            .content
            .tensor_infos
            .get(name)
            .map_or(0, |info| info.shape.elem_count());
        let tensor = self.tensor(name, &[len])?;
        tensor
            .dequantize(&candle_core::Device::Cpu)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| EngineError::model_load_at_from(&self.path, format_args!("cannot read `{name}`"), e))
    }

    /// RoPE scaling as llama.cpp reads it: per-frequency factors (`rope_freqs`: Llama 3.1's
    /// scaling baked by the converter), Phi-3's long and short factors, or `rope.scaling.type`.
    pub fn rope_scaling(&self) -> Result<Option<RopeScaling>> {
        if self.has_tensor("rope_freqs.weight") {
            return Ok(Some(RopeScaling::FrequencyDivisors {
                divisors: self.f32_values("rope_freqs.weight")?,
            }));
        }
        let original = self.arch_usize("rope.scaling.original_context_length")?;
        let context = self.arch_usize("context_length")?.unwrap_or(0);
        if self.has_tensor("rope_factors_long.weight") {
            let original = original.unwrap_or(context);
            let factor = context as f32 / original.max(1) as f32;
            let default_attention = if factor <= 1.0 {
                1.0
            } else {
                (1.0 + factor.ln() / (original as f32).ln()).sqrt()
            };
            return Ok(Some(RopeScaling::LongRope {
                short_factor: self.f32_values("rope_factors_short.weight")?,
                long_factor: self.f32_values("rope_factors_long.weight")?,
                original_max_position_embeddings: original,
                attention_factor: self.arch_f32("rope.scaling.attn_factor")?.unwrap_or(default_attention),
            }));
        }
        let kind = self
            .value(&format!("{}.rope.scaling.type", self.architecture()?))
            .and_then(|v| v.to_string().ok())
            .cloned();
        let factor = self.arch_f32("rope.scaling.factor")?.unwrap_or(1.0);
        match kind.as_deref() {
            None | Some("none") => Ok(None),
            Some("linear") => Ok(Some(RopeScaling::Linear { factor })),
            Some("yarn") => Ok(Some(RopeScaling::Yarn {
                factor,
                original_max_position_embeddings: original.unwrap_or(context),
                beta_fast: self.arch_f32("rope.scaling.yarn_beta_fast")?.unwrap_or(32.0),
                beta_slow: self.arch_f32("rope.scaling.yarn_beta_slow")?.unwrap_or(1.0),
                attention_factor: (0.1 * factor.ln() + 1.0)
                    * self.arch_f32("rope.scaling.attn_factor")?.unwrap_or(1.0),
                truncate: true,
            })),
            Some(other) => Err(EngineError::model_load_at(
                &self.path,
                format!("rope scaling type `{other}` is not supported (supported: linear, yarn, rope_freqs, LongRoPE factors)"),
            )),
        }
    }

    pub fn token_embedding_rows(&self) -> Result<usize> {
        let info = self
            .content
            .tensor_infos
            .get("token_embd.weight")
            .ok_or_else(|| EngineError::model_load_at(&self.path, "tensor `token_embd.weight` is missing"))?;
        Ok(info.shape.dims().first().copied().unwrap_or(0))
    }

    /// A `generation_config.json` beside the file, if any.
    pub fn generation_config(&self) -> GenerationConfig {
        match self.path.parent() {
            Some(dir) => read_generation_config(&dir.join("generation_config.json")),
            None => GenerationConfig::default(),
        }
    }

    /// EOS, end-of-turn and end-of-message ids, plus any `generation_config.json` beside the file.
    pub fn eos_token_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = ["eos_token_id", "eot_token_id", "eom_token_id"]
            .iter()
            .filter_map(|k| self.optional_token_id(&format!("tokenizer.ggml.{k}")))
            .collect();
        ids.extend(self.generation_config().eos_token_ids);
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

pub fn value_to_u64(value: &Value) -> Option<u64> {
    match value {
        Value::U8(v) => Some(*v as u64),
        Value::U16(v) => Some(*v as u64),
        Value::U32(v) => Some(*v as u64),
        Value::U64(v) => Some(*v),
        Value::I8(v) => u64::try_from(*v).ok(),
        Value::I16(v) => u64::try_from(*v).ok(),
        Value::I32(v) => u64::try_from(*v).ok(),
        Value::I64(v) => u64::try_from(*v).ok(),
        _ => None,
    }
}

use super::generation_config::{read_generation_config, GenerationConfig};
