//! Tiny random-weight Llama models written as GGUF files at test time, so scheduler and
//! engine tests run in milliseconds through the same loader as real models.

use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use crate::error::{EngineError, Result};

/// The shape and storage type of a tiny model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyLlamaSpec {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub context_length: usize,
    /// Storage type of the projection and embedding matrices (norms stay f32).
    pub dtype: GgmlDType,
    /// Without an `output.weight`, the embedding doubles as the output head.
    pub tie_embeddings: bool,
    pub eos_token_id: u32,
    pub seed: u64,
}

impl Default for TinyLlamaSpec {
    fn default() -> Self {
        Self {
            vocab_size: 256,
            hidden_size: 64,
            intermediate_size: 128,
            num_layers: 2,
            num_heads: 4,
            num_kv_heads: 2,
            context_length: 1024,
            dtype: GgmlDType::F32,
            tie_embeddings: true,
            eos_token_id: 0,
            seed: 7,
        }
    }
}

fn random_matrix(rows: usize, cols: usize, scale: f64, seed: u64) -> Result<Tensor> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let bound = scale * (3.0f64 / cols as f64).sqrt();
    let values: Vec<f32> = (0..rows * cols)
        .map(|_| rng.random_range(-bound..bound) as f32)
        .collect();
    Ok(Tensor::from_vec(values, (rows, cols), &Device::Cpu)?)
}

impl TinyLlamaSpec {
    pub fn metadata(&self) -> Vec<(String, Value)> {
        let head_dim = self.hidden_size / self.num_heads;
        let u32_value = |v: usize| Value::U32(v as u32);
        vec![
            ("general.architecture".into(), Value::String("llama".into())),
            (
                "general.name".into(),
                Value::String("pagoda-tiny-llama".into()),
            ),
            ("llama.block_count".into(), u32_value(self.num_layers)),
            (
                "llama.context_length".into(),
                u32_value(self.context_length),
            ),
            ("llama.embedding_length".into(), u32_value(self.hidden_size)),
            (
                "llama.feed_forward_length".into(),
                u32_value(self.intermediate_size),
            ),
            (
                "llama.attention.head_count".into(),
                u32_value(self.num_heads),
            ),
            (
                "llama.attention.head_count_kv".into(),
                u32_value(self.num_kv_heads),
            ),
            ("llama.rope.dimension_count".into(), u32_value(head_dim)),
            ("llama.rope.freq_base".into(), Value::F32(10_000.0)),
            (
                "llama.attention.layer_norm_rms_epsilon".into(),
                Value::F32(1e-5),
            ),
            ("llama.vocab_size".into(), u32_value(self.vocab_size)),
            (
                "tokenizer.ggml.eos_token_id".into(),
                Value::U32(self.eos_token_id),
            ),
            ("tokenizer.ggml.bos_token_id".into(), Value::U32(1)),
        ]
    }

    /// Named tensors with random weights; norms are ones, so every layer is active.
    pub fn tensors(&self) -> Result<Vec<(String, QTensor)>> {
        let (h, i) = (self.hidden_size, self.intermediate_size);
        let head_dim = h / self.num_heads;
        let kv = self.num_kv_heads * head_dim;
        let mut seed = self.seed;
        let mut matrix = |rows: usize, cols: usize, scale: f64| -> Result<QTensor> {
            seed += 1;
            Ok(QTensor::quantize(
                &random_matrix(rows, cols, scale, seed)?,
                self.dtype,
            )?)
        };
        let ones = |len: usize| -> Result<QTensor> {
            Ok(QTensor::quantize(
                &Tensor::ones(len, candle_core::DType::F32, &Device::Cpu)?,
                GgmlDType::F32,
            )?)
        };
        let mut tensors = vec![(
            "token_embd.weight".to_string(),
            matrix(self.vocab_size, h, 3.0)?,
        )];
        for layer in 0..self.num_layers {
            let p = format!("blk.{layer}");
            tensors.push((format!("{p}.attn_norm.weight"), ones(h)?));
            tensors.push((format!("{p}.attn_q.weight"), matrix(h, h, 2.0)?));
            tensors.push((format!("{p}.attn_k.weight"), matrix(kv, h, 2.0)?));
            tensors.push((format!("{p}.attn_v.weight"), matrix(kv, h, 1.0)?));
            tensors.push((format!("{p}.attn_output.weight"), matrix(h, h, 1.0)?));
            tensors.push((format!("{p}.ffn_norm.weight"), ones(h)?));
            tensors.push((format!("{p}.ffn_gate.weight"), matrix(i, h, 1.0)?));
            tensors.push((format!("{p}.ffn_up.weight"), matrix(i, h, 1.0)?));
            tensors.push((format!("{p}.ffn_down.weight"), matrix(h, i, 1.0)?));
        }
        tensors.push(("output_norm.weight".into(), ones(h)?));
        if !self.tie_embeddings {
            tensors.push(("output.weight".into(), matrix(self.vocab_size, h, 3.0)?));
        }
        Ok(tensors)
    }

    /// Writes the model as a GGUF file at `path`.
    pub fn write_gguf(&self, path: &Path) -> Result<()> {
        write_gguf(path, &self.metadata(), &self.tensors()?)
    }
}

/// Writes any metadata and tensors as a GGUF file (tests use it to build broken files too).
pub fn write_gguf(
    path: &Path,
    metadata: &[(String, Value)],
    tensors: &[(String, QTensor)],
) -> Result<()> {
    {
        let mut file =
            std::fs::File::create(path).map_err(|e| EngineError::model_load(e.to_string()))?;
        let metadata_refs: Vec<(&str, &Value)> =
            metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let tensor_refs: Vec<(&str, &QTensor)> =
            tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
        gguf_file::write(&mut file, &metadata_refs, &tensor_refs)?;
        Ok(())
    }
}
