//! The decoder every family runs: embeddings, `num_layers` blocks of self-attention and a gated
//! MLP with RMS norms around them, a final norm and the output head, over a paged KV cache.
//! What differs between families are values of `ModelConfig` (its `features`), read here and in
//! the layers; no code path asks which family it runs.

use std::sync::Arc;

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Tensor};

use super::causal_lm::{CausalLm, ModelInput};
use super::config::ModelConfig;
use super::fused::FusedOps;
use super::layers::{GatedMlp, RmsNorm};
use super::moe::MoeBlock;
use super::linear::Linear;
use super::rotary::{RotaryEmbedding, StepRotary};
use super::self_attention::SelfAttention;
use super::weights::WeightSource;
use crate::attention::{AttnMetadata, LayerAttention, PagedKvCache};
use crate::error::{EngineError, Result};

/// A layer's MLP: dense (with LoRA) or a mixture of experts (without).
#[derive(Debug)]
enum FeedForward {
    Dense(GatedMlp),
    Experts(Box<MoeBlock>),
}

#[derive(Debug)]
struct DecoderLayer {
    attn_norm: RmsNorm,
    attention: SelfAttention,
    /// Layer `i`'s scale, window and softcap.
    settings: LayerAttention,
    /// Whether the layer takes the local RoPE tables (Gemma 3's sliding layers).
    local_rope: bool,
    mlp_norm: RmsNorm,
    mlp: FeedForward,
    /// Gemma 2/3: norms of the attention's and the MLP's outputs.
    post_attn_norm: Option<RmsNorm>,
    post_mlp_norm: Option<RmsNorm>,
}

impl DecoderLayer {
    fn load(weights: &dyn WeightSource, cfg: &ModelConfig, index: usize) -> Result<Self> {
        let p = format!("blk.{index}");
        let norm = |name: &str| RmsNorm::load_for(weights, cfg, &format!("{p}.{name}.weight"), cfg.hidden_size);
        let sandwich = cfg.features.sandwich_norms;
        let settings = LayerAttention {
            sinks: layer_sinks(weights, cfg, &p)?,
            ..cfg.layer_attention(index)
        };
        Ok(Self {
            attn_norm: norm("attn_norm")?,
            attention: SelfAttention::load(weights, cfg, &p)?,
            local_rope: cfg.features.local_rope_theta.is_some() && settings.window.is_some(),
            settings,
            mlp_norm: norm("ffn_norm")?,
            mlp: match &cfg.features.moe {
                Some(spec) => FeedForward::Experts(Box::new(MoeBlock::load(weights, &p, cfg.hidden_size, (spec, cfg.features.activation))?)),
                None => FeedForward::Dense(GatedMlp::load(weights, &p, (cfg.hidden_size, cfg.intermediate_size), cfg.features.activation)?),
            },
            post_attn_norm: sandwich.then(|| norm("post_attention_norm")).transpose()?,
            post_mlp_norm: sandwich.then(|| norm("post_ffw_norm")).transpose()?,
        })
    }
}

/// A layer's attention sinks (`{prefix}.attn_sinks`, one per query head), when the family has
/// them.
fn layer_sinks(weights: &dyn WeightSource, cfg: &ModelConfig, prefix: &str) -> Result<Option<Arc<[f32]>>> {
    if !cfg.features.attention_sinks {
        return Ok(None);
    }
    let sinks = weights.vector(&format!("{prefix}.attn_sinks.weight"), cfg.num_heads)?;
    let values = sinks.to_dtype(DType::F32)?.to_vec1::<f32>()?;
    Ok(Some(values.into()))
}

/// A decoder-only transformer. Holds weights only; the KV cache comes in with every call.
#[derive(Debug)]
pub struct Decoder {
    config: ModelConfig,
    device: Device,
    /// The compute dtype of activations (and of the KV cache).
    dtype: DType,
    embedding: QMatMul,
    layers: Vec<DecoderLayer>,
    final_norm: RmsNorm,
    lm_head: Linear,
    rotary: RotaryEmbedding,
    /// Gemma 3's sliding layers' tables (their own base, no scaling).
    local_rotary: Option<RotaryEmbedding>,
    /// One kernel per element-wise step on a GPU.
    fused: FusedOps,
}

impl Decoder {
    pub fn load(config: ModelConfig, file: &dyn WeightSource, device: &Device) -> Result<Self> {
        let device = device.clone();
        if config.features.attention_sinks && !device.is_cpu() {
            return Err(EngineError::model_load(
                "attention sinks (gpt-oss) run on the CPU only: the CUDA attention kernel has no \
                 sink term yet; serve this model with --device cpu",
            ));
        }
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
        let final_norm = RmsNorm::load_for(file, &config, "output_norm.weight", config.hidden_size)?;
        let rotary = RotaryEmbedding::new(&config, &device, dtype)?;
        let local_rotary = config
            .features
            .local_rope_theta
            .map(|theta| RotaryEmbedding::with_base(&config, (theta, None), &device, dtype))
            .transpose()?;
        let fused = FusedOps::new(&device)?;
        Ok(Self {
            embedding,
            device,
            dtype,
            layers,
            final_norm,
            lm_head,
            rotary,
            local_rotary,
            fused,
            config,
        })
    }

    /// The step's token embeddings, scaled where the family scales them.
    fn embed(&self, input: &ModelInput) -> Result<Tensor> {
        let x = self
            .embedding
            .embedding(&input.token_ids)?
            .to_dtype(self.dtype)?;
        Ok(match self.config.features.embedding_scale {
            Some(scale) => (x * scale as f64)?,
            None => x,
        })
    }

    /// A residual branch as it is added: normed after (Gemma), scaled (Granite).
    fn branch(&self, norm: Option<&RmsNorm>, branch: Tensor) -> Result<Tensor> {
        let branch = match norm {
            Some(norm) => norm.forward(&branch)?,
            None => branch,
        };
        Ok(match self.config.features.residual_scale {
            Some(scale) => (branch * scale as f64)?,
            None => branch,
        })
    }

    /// The output head's logits of the selected rows, capped or divided where the family says.
    fn logits(&self, x: &Tensor, input: &ModelInput) -> Result<Tensor> {
        if input.logits_indices.dim(0)? == 0 {
            return Ok(Tensor::zeros((0, self.config.vocab_size), DType::F32, &self.device)?);
        }
        let last = x.index_select(&input.logits_indices, 0)?;
        let mut logits = self
            .lm_head
            .forward(&self.final_norm.forward(&last)?)?
            .to_dtype(DType::F32)?;
        if let Some(divisor) = self.config.features.logit_divisor {
            logits = (logits / divisor as f64)?;
        }
        if let Some(cap) = self.config.features.final_logit_softcap {
            logits = self.fused.softcap(&logits, cap)?;
        }
        Ok(logits)
    }
}

impl CausalLm for Decoder {
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
        let mut x = self.embed(input)?;
        let rotary = self.rotary.for_positions(&input.positions)?;
        let local_rotary: Option<StepRotary> = self
            .local_rotary
            .as_ref()
            .map(|r| r.for_positions(&input.positions))
            .transpose()?;
        // Each residual add is fused with the RMS norm that follows it (the next layer's
        // attention norm, or this layer's MLP norm); the last add stands alone, since the final
        // norm runs on the sampled rows only.
        let mut normed = match self.layers.first() {
            Some(first) => first.attn_norm.forward(&x)?,
            None => x.clone(),
        };
        for (index, layer) in self.layers.iter().enumerate() {
            let rotary = match (&local_rotary, layer.local_rope) {
                (Some(local), true) => local,
                _ => &rotary,
            };
            let attn = layer.attention.forward(
                (index, &layer.settings),
                &normed,
                input,
                (rotary, &self.fused),
                (meta, kv_cache),
            )?;
            let attn = self.branch(layer.post_attn_norm.as_ref(), attn)?;
            let (sum, mlp_input) = layer.mlp_norm.forward_after_add(&x, &attn, &self.fused)?;
            let mlp = match &layer.mlp {
                FeedForward::Dense(mlp) => mlp.forward(index, &mlp_input, &input.lora, &self.fused)?,
                FeedForward::Experts(moe) => moe.forward(&mlp_input, &self.fused)?,
            };
            let mlp = self.branch(layer.post_mlp_norm.as_ref(), mlp)?;
            match self.layers.get(index + 1) {
                Some(next) => {
                    (x, normed) = next.attn_norm.forward_after_add(&sum, &mlp, &self.fused)?;
                }
                None => x = (sum + mlp)?,
            }
        }
        self.logits(&x, input)
    }
}
