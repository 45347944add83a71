//! The Llama-family decoder (Llama, Mistral, Qwen2, Qwen3: GQA, RoPE, tied or untied embeddings)
//! over a paged KV cache. Family differences are flags of `ModelConfig`, read by the layers.

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{Device, Tensor};
use std::sync::Arc;

use super::config::ModelConfig;
use super::layers::{GatedMlp, RmsNorm};
use super::linear::Linear;
use super::rotary::RotaryEmbedding;
use super::self_attention::SelfAttention;
use super::weights::WeightSource;
use super::{CausalLm, ModelInput};
use crate::attention::{AttnMetadata, PagedKvCache};
use crate::error::{EngineError, Result};

#[derive(Debug)]
struct DecoderLayer {
    attn_norm: RmsNorm,
    attention: SelfAttention,
    mlp_norm: RmsNorm,
    mlp: GatedMlp,
}

impl DecoderLayer {
    fn load(weights: &dyn WeightSource, cfg: &ModelConfig, index: usize) -> Result<Self> {
        let p = format!("blk.{index}");
        let (h, eps) = (cfg.hidden_size, cfg.rms_norm_eps);
        Ok(Self {
            attn_norm: RmsNorm::load(weights, &format!("{p}.attn_norm.weight"), h, eps)?,
            attention: SelfAttention::load(weights, cfg, &p)?,
            mlp_norm: RmsNorm::load(weights, &format!("{p}.ffn_norm.weight"), h, eps)?,
            mlp: GatedMlp::load(weights, &p, h, cfg.intermediate_size)?,
        })
    }
}

/// A Llama-family decoder. Holds weights only; the KV cache comes in with every call.
#[derive(Debug)]
pub struct Llama {
    config: ModelConfig,
    device: Device,
    embedding: QMatMul,
    layers: Vec<DecoderLayer>,
    final_norm: RmsNorm,
    lm_head: Linear,
    rotary: RotaryEmbedding,
}

impl Llama {
    pub fn load(config: ModelConfig, file: &dyn WeightSource, device: &Device) -> Result<Self> {
        let device = device.clone();
        let embedding = file.matrix("token_embd.weight", config.vocab_size, config.hidden_size)?;
        let lm_head = if !file.ties_embeddings() {
            file.linear("output.weight", config.vocab_size, config.hidden_size)?
        } else {
            file.weight_format()
                .convert(embedding.clone())
                .map_err(|e| EngineError::ModelLoad(format!("output head: {e}")))?
        };
        let layers = (0..config.num_layers)
            .map(|i| DecoderLayer::load(file, &config, i))
            .collect::<Result<Vec<_>>>()?;
        let final_norm = RmsNorm::load(
            file,
            "output_norm.weight",
            config.hidden_size,
            config.rms_norm_eps,
        )?;
        let rotary = RotaryEmbedding::new(&config, &device)?;
        Ok(Self {
            embedding: qmatmul(embedding)?,
            device,
            layers,
            final_norm,
            lm_head,
            rotary,
            config,
        })
    }
}

fn qmatmul(tensor: Arc<QTensor>) -> Result<QMatMul> {
    QMatMul::from_arc(tensor).map_err(|e| EngineError::ModelLoad(e.to_string()))
}

impl CausalLm for Llama {
    fn config(&self) -> &ModelConfig {
        &self.config
    }

    fn device(&self) -> &Device {
        &self.device
    }

    fn forward(
        &self,
        input: &ModelInput,
        meta: &AttnMetadata,
        kv_cache: &mut dyn PagedKvCache,
    ) -> Result<Tensor> {
        let mut x = self.embedding.embedding(&input.token_ids)?;
        for (index, layer) in self.layers.iter().enumerate() {
            let normed = layer.attn_norm.forward(&x)?;
            let attn = layer.attention.forward(
                index,
                &normed,
                &input.positions,
                &self.rotary,
                meta,
                kv_cache,
            )?;
            x = (x + attn)?;
            let mlp = layer.mlp.forward(&layer.mlp_norm.forward(&x)?)?;
            x = (x + mlp)?;
        }
        if input.logits_indices.dim(0)? == 0 {
            return Ok(Tensor::zeros(
                (0, self.config.vocab_size),
                candle_core::DType::F32,
                &self.device,
            )?);
        }
        let last = x.index_select(&input.logits_indices, 0)?;
        let logits = self.lm_head.forward(&self.final_norm.forward(&last)?)?;
        Ok(logits)
    }
}
