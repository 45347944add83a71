//! Loading a model onto a device in a compute dtype: GGUF files, Hugging Face directories, or
//! random weights in a directory's shapes (`LoadFormat::Dummy`).

use std::path::Path;

use candle_core::Device;

use super::architecture::{gguf_family, gguf_model_config};
use super::causal_lm::CausalLm;
use super::dtype::ModelDType;
use super::dummy::DummyWeights;
use super::gguf::GgufFile;
use super::hf::{saved_dtype, HfDirectory};
use super::hf_config::HfConfig;
use super::decoder::Decoder;
use super::weight_format::WeightFormat;
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
    #[cfg(feature = "testing")]
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

/// Loads any supported model (a GGUF file, or a Hugging Face directory) for the CPU, or onto
/// `device` in f32; `load_model_with` chooses the dtype and load format.
#[cfg(feature = "testing")]
pub fn load_model(
    path: &Path,
    device: &Device,
    weight_format: WeightFormat,
) -> Result<Box<dyn CausalLm>> {
    let options = LoadOptions {
        device: device.clone(),
        dtype: ModelDType::F32,
        ..LoadOptions::cpu(weight_format)
    };
    load_model_with(path, &options)
}

/// Loads any supported model as `options` say. Every failure is a `ModelLoad` error that names
/// `path` (or the file inside it that is at fault) and keeps the error behind it as its source.
pub fn load_model_with(path: &Path, options: &LoadOptions) -> Result<Box<dyn CausalLm>> {
    load_any(path, options).map_err(|e| e.loading(path))
}

fn load_any(path: &Path, options: &LoadOptions) -> Result<Box<dyn CausalLm>> {
    if !path.exists() {
        return Err(EngineError::model_load(format!(
            "{} does not exist",
            path.display()
        )));
    }
    if options.load_format == LoadFormat::Dummy {
        return load_dummy(path, options);
    }
    if path.is_dir() {
        let device = &options.device;
        let saved = saved_dtype(&HfConfig::read(&path.join("config.json"))?);
        let dtype = options.dtype.resolve(device, saved);
        let dir = HfDirectory::open_on(path, options.weight_format, device, dtype)?;
        return Ok(Box::new(Decoder::load(dir.model_config()?, &dir, device)?));
    }
    let is_gguf = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if !is_gguf {
        return Err(EngineError::model_load(format!(
            "{}: expected a .gguf file or a Hugging Face model directory",
            path.display()
        )));
    }
    load_gguf(path, options)
}

/// Random weights in the shapes of `path/config.json`.
fn load_dummy(path: &Path, options: &LoadOptions) -> Result<Box<dyn CausalLm>> {
    let device = &options.device;
    if !path.join("config.json").is_file() {
        return Err(EngineError::model_load(format!(
            "{}: --load-format dummy needs a directory with a config.json",
            path.display()
        )));
    }
    let saved = saved_dtype(&HfConfig::read(&path.join("config.json"))?);
    let dtype = options.dtype.resolve(device, saved);
    let (weights, config) = DummyWeights::open(path, device, dtype, options.seed)?;
    Ok(Box::new(Decoder::load(config, &weights, device)?))
}

fn load_gguf(path: &Path, options: &LoadOptions) -> Result<Box<dyn CausalLm>> {
    let device = &options.device;
    let dtype = options.dtype.resolve(device, None);
    let file = GgufFile::open(path, device, options.weight_format)?.with_dtype(dtype);
    let (_, family) = gguf_family(&file)?;
    let file = file.with_tensor_names(family.gguf_tensor_name);
    Ok(Box::new(Decoder::load(gguf_model_config(&file)?, &file, device)?))
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use crate::testing::TinyLlamaSpec;

    /// The `ModelLoad` error's message and whether it has a source; fails on anything else.
    fn load_failure(path: &Path) -> (String, bool) {
        let Err(error) = load_model(path, &Device::Cpu, WeightFormat::F32) else {
            panic!("{} loaded but is broken", path.display());
        };
        let has_source = error.source().is_some();
        match error {
            EngineError::ModelLoad { message, .. } => (message, has_source),
            other => panic!("expected a ModelLoad error, got {other:?}"),
        }
    }

    #[test]
    fn a_garbage_gguf_is_a_load_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("garbage.gguf");
        std::fs::write(&path, b"GGUF\x03\x00\x00\x00 this is not a model at all").expect("write");
        let (message, has_source) = load_failure(&path);
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("not a valid GGUF"), "{message}");
        assert!(has_source, "the parser's error is kept as the source");
    }

    #[test]
    fn a_truncated_gguf_is_a_load_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let whole = dir.path().join("whole.gguf");
        TinyLlamaSpec::default()
            .write_gguf(&whole)
            .expect("tiny model");
        let bytes = std::fs::read(&whole).expect("read");
        let path = dir.path().join("truncated.gguf");
        std::fs::write(&path, &bytes[..bytes.len() * 3 / 4]).expect("write");
        let (message, _) = load_failure(&path);
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(!message.contains("execution"), "{message}");
    }
}
