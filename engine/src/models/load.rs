//! Loading a model onto a device in a compute dtype: GGUF files, Hugging Face directories, or
//! random weights in a directory's shapes (`LoadFormat::Dummy`).

use std::path::Path;

use candle_core::Device;

use super::dummy::DummyWeights;
use super::gguf::GgufFile;
use super::hf::{saved_dtype, HfDirectory};
use super::hf_config::HfConfig;
use super::llama::Llama;
use super::weights::WeightFormat;
use super::{CausalLm, SUPPORTED_GGUF_ARCHITECTURES};
use crate::config::ModelDType;
use crate::error::{EngineError, Result};

/// Where the weights come from (`--load-format`, vLLM's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadFormat {
    /// The model file or directory's own weights.
    #[default]
    Auto,
    /// Random weights in the shapes of the directory's config.json (benchmarks).
    Dummy,
}

impl LoadFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "dummy" => Some(Self::Dummy),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Dummy => "dummy",
        }
    }
}

/// How to load a model.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub device: Device,
    /// The requested compute dtype; the CPU computes in f32 whatever it is.
    pub dtype: ModelDType,
    /// How projections are held on the CPU.
    pub weight_format: WeightFormat,
    pub load_format: LoadFormat,
    /// Seed of dummy weights.
    pub seed: u64,
}

impl LoadOptions {
    /// The CPU defaults: f32 compute, weights in `weight_format`.
    pub fn cpu(weight_format: WeightFormat) -> Self {
        Self {
            device: Device::Cpu,
            dtype: ModelDType::Auto,
            weight_format,
            load_format: LoadFormat::Auto,
            seed: 0,
        }
    }
}

/// Loads any supported model as `options` say.
pub fn load_model_with(path: &Path, options: &LoadOptions) -> Result<Box<dyn CausalLm>> {
    if !path.exists() {
        return Err(EngineError::ModelLoad(format!(
            "{} does not exist",
            path.display()
        )));
    }
    let device = &options.device;
    if options.load_format == LoadFormat::Dummy {
        if !path.join("config.json").is_file() {
            return Err(EngineError::ModelLoad(format!(
                "{}: --load-format dummy needs a directory with a config.json",
                path.display()
            )));
        }
        let saved = saved_dtype(&HfConfig::read(&path.join("config.json"))?);
        let dtype = options.dtype.resolve(device, saved);
        let (weights, config) = DummyWeights::open(path, device, dtype, options.seed)?;
        return Ok(Box::new(Llama::load(config, &weights, device)?));
    }
    if path.is_dir() {
        let saved = saved_dtype(&HfConfig::read(&path.join("config.json"))?);
        let dtype = options.dtype.resolve(device, saved);
        let dir = HfDirectory::open_on(path, options.weight_format, device, dtype)?;
        return Ok(Box::new(Llama::load(dir.model_config()?, &dir, device)?));
    }
    let is_gguf = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if !is_gguf {
        return Err(EngineError::ModelLoad(format!(
            "{}: expected a .gguf file or a Hugging Face model directory",
            path.display()
        )));
    }
    let dtype = options.dtype.resolve(device, None);
    let file = GgufFile::open(path, device, options.weight_format)?.with_dtype(dtype);
    let architecture = file.architecture()?;
    if !SUPPORTED_GGUF_ARCHITECTURES.contains(&architecture.as_str()) {
        return Err(EngineError::ModelLoad(format!(
            "unsupported architecture `{architecture}` in {} (supported: {})",
            path.display(),
            SUPPORTED_GGUF_ARCHITECTURES.join(", ")
        )));
    }
    Ok(Box::new(Llama::load(file.model_config()?, &file, device)?))
}
