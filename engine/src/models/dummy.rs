//! Random weights in a model's real shapes (`--load-format dummy`, like vLLM's): for speed
//! benchmarks of shapes whose weights are not at hand. Only config.json is read; every projection
//! is drawn uniformly with a variance that keeps activations near unit scale, norms are ones,
//! biases zeros. The same seed gives the same weights on the same device.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Tensor};
use rand::{Rng, SeedableRng};

use super::config::ModelConfig;
use super::hf::read_model_config;
use super::hf_config::HfConfig;
use super::linear::Linear;
use super::weight_format::WeightFormat;
use super::weights::{dense_embedding_and_tied_head, WeightSource};
use crate::error::{EngineError, Result};

#[derive(Debug)]
pub struct DummyWeights {
    dir: PathBuf,
    tie_word_embeddings: bool,
    device: Device,
    dtype: DType,
    /// Drawn tensors so far: each gets its own seed.
    num_drawn: Cell<u64>,
    seed: u64,
}

impl DummyWeights {
    /// Reads `dir/config.json` (and generation_config.json); no weight file is needed.
    pub fn open(
        dir: &Path,
        device: &Device,
        dtype: DType,
        seed: u64,
    ) -> Result<(Self, ModelConfig)> {
        let config_path = dir.join("config.json");
        let hf = HfConfig::read(&config_path)?;
        let model_config = read_model_config(dir, &hf)?;
        let weights = Self {
            dir: dir.to_path_buf(),
            tie_word_embeddings: hf.tie_word_embeddings,
            device: device.clone(),
            dtype: if device.is_cpu() { DType::F32 } else { dtype },
            num_drawn: Cell::new(0),
            seed,
        };
        Ok((weights, model_config))
    }

    /// A `[rows, cols]` matrix uniform in ±√(3/cols): unit-variance outputs for unit inputs.
    fn random(&self, rows: usize, cols: usize) -> Result<Tensor> {
        let index = self.num_drawn.get();
        self.num_drawn.set(index + 1);
        let seed = self.seed.wrapping_mul(0x9e37_79b9).wrapping_add(index);
        let bound = (3.0 / cols as f64).sqrt() as f32;
        let draw = || {
            let tensor = if self.device.is_cpu() {
                // candle's CPU generator cannot be seeded: draw here.
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let values: Vec<f32> = (0..rows * cols)
                    .map(|_| rng.random_range(-bound..bound))
                    .collect();
                Tensor::from_vec(values, (rows, cols), &self.device)?
            } else {
                self.device.set_seed(seed)?;
                Tensor::rand(-bound, bound, (rows, cols), &self.device)?
            };
            tensor.to_dtype(self.dtype)
        };
        draw().map_err(|e| self.error(e))
    }

    fn error(&self, source: candle_core::Error) -> EngineError {
        EngineError::model_load_from(
            format_args!("{}: cannot make dummy weights", self.dir.display()),
            source,
        )
    }
}

impl WeightSource for DummyWeights {
    fn linear(&self, _name: &str, out_dim: usize, in_dim: usize) -> Result<Linear> {
        Ok(Linear::Candle(QMatMul::Tensor(
            self.random(out_dim, in_dim)?,
        )))
    }

    fn vector(&self, name: &str, len: usize) -> Result<Tensor> {
        let value = if name.ends_with(".bias") { 0.0 } else { 1.0 };
        Tensor::full(value as f32, len, &self.device)
            .and_then(|t| t.to_dtype(self.dtype))
            .map_err(|e| self.error(e))
    }

    fn matrix(&self, _name: &str, rows: usize, cols: usize) -> Result<Arc<QTensor>> {
        let dense = self.random(rows, cols)?;
        let matrix = dense
            .to_dtype(DType::F32)
            .and_then(|t| QTensor::quantize(&t, GgmlDType::F32))
            .map_err(|e| self.error(e))?;
        Ok(Arc::new(matrix))
    }

    fn contains(&self, name: &str) -> bool {
        name != "output.weight" || !self.tie_word_embeddings
    }

    fn ties_embeddings(&self) -> bool {
        self.tie_word_embeddings
    }

    fn weight_format(&self) -> WeightFormat {
        WeightFormat::F32
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    /// Embeddings of unit-scale rows; a tied head shares the table.
    fn embedding_and_tied_head(
        &self,
        vocab_size: usize,
        hidden_size: usize,
    ) -> Result<(QMatMul, Option<Linear>)> {
        let table = self.random(vocab_size, hidden_size)?;
        Ok(dense_embedding_and_tied_head(
            table,
            self.tie_word_embeddings,
        ))
    }
}
