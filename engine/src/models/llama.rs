//! The Llama-family decoder (Llama, Mistral, Qwen2, Qwen3: GQA, RoPE, tied or untied embeddings)
//! over a paged KV cache. Family differences are flags of `ModelConfig`, read by the layers.

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Tensor};

use super::causal_lm::{CausalLm, ModelInput};
use super::config::ModelConfig;
use super::layers::{GatedMlp, RmsNorm};
use super::linear::Linear;
use super::fused::FusedOps;
use super::rotary::RotaryEmbedding;
use super::self_attention::SelfAttention;
use super::weights::WeightSource;
use crate::attention::{AttnMetadata, PagedKvCache};
use crate::error::Result;

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
    /// The compute dtype of activations (and of the KV cache).
    dtype: DType,
    embedding: QMatMul,
    layers: Vec<DecoderLayer>,
    final_norm: RmsNorm,
    lm_head: Linear,
    rotary: RotaryEmbedding,
    /// One kernel per element-wise step on a GPU.
    fused: FusedOps,
}

impl Llama {
    pub fn load(config: ModelConfig, file: &dyn WeightSource, device: &Device) -> Result<Self> {
        let device = device.clone();
        let dtype = file.dtype();
        let (embedding, tied_head) =
            file.embedding_and_tied_head(config.vocab_size, config.hidden_size)?;
        let lm_head = match tied_head {
            Some(head) => head,
            None => file.linear("output.weight", config.vocab_size, config.hidden_size)?,
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
        let rotary = RotaryEmbedding::new(&config, &device, dtype)?;
        let fused = FusedOps::new(&device)?;
        Ok(Self {
            embedding,
            device,
            dtype,
            layers,
            final_norm,
            lm_head,
            rotary,
            fused,
            config,
        })
    }
}

impl CausalLm for Llama {
    fn config(&self) -> &ModelConfig {
        &self.config
    }

    fn device(&self) -> &Device {
        &self.device
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn forward(
        &self,
        input: &ModelInput,
        meta: &AttnMetadata,
        kv_cache: &mut dyn PagedKvCache,
    ) -> Result<Tensor> {
        let mut x = self
            .embedding
            .embedding(&input.token_ids)?
            .to_dtype(self.dtype)?;
        let rotary = self.rotary.for_positions(&input.positions)?;
        // Each residual add is fused with the RMS norm that follows it (the next layer's
        // attention norm, or this layer's MLP norm); the last add stands alone, since the final
        // norm runs on the sampled rows only.
        let mut normed = match self.layers.first() {
            Some(first) => first.attn_norm.forward(&x)?,
            None => x.clone(),
        };
        for (index, layer) in self.layers.iter().enumerate() {
            let attn = layer.attention.forward(
                index,
                &normed,
                input,
                (&rotary, &self.fused),
                meta,
                kv_cache,
            )?;
            let (sum, mlp_input) = layer.mlp_norm.forward_after_add(&x, &attn, &self.fused)?;
            let mlp = layer
                .mlp
                .forward(index, &mlp_input, &input.lora, &self.fused)?;
            match self.layers.get(index + 1) {
                Some(next) => {
                    (x, normed) = next.attn_norm.forward_after_add(&sum, &mlp, &self.fused)?;
                }
                None => x = (sum + mlp)?,
            }
        }
        if input.logits_indices.dim(0)? == 0 {
            return Ok(Tensor::zeros(
                (0, self.config.vocab_size),
                DType::F32,
                &self.device,
            )?);
        }
        let last = x.index_select(&input.logits_indices, 0)?;
        let logits = self.lm_head.forward(&self.final_norm.forward(&last)?)?;
        Ok(logits.to_dtype(DType::F32)?)
    }
}
