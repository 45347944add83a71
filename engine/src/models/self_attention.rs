//! The self-attention block every family shares: fused q/k/v projection (with optional
//! biases; a checkpoint's own fused `attn_qkv` as it is), optional per-head q/k RMS norm, RoPE,
//! paged attention with the layer's settings, output projection.

use candle_core::Tensor;

use super::causal_lm::ModelInput;
use super::config::ModelConfig;
use super::layers::RmsNorm;
use super::linear::Projection;
use super::fused::{FusedOps, QkHeads};
use super::rotary::StepRotary;
use super::weights::WeightSource;
use crate::attention::{AttnMetadata, LayerAttention, PagedKvCache};
use crate::error::Result;
use crate::lora::adapter::FusedProjection;

#[derive(Debug)]
pub struct SelfAttention {
    /// q, k and v fused, in that order.
    qkv: Projection,
    o_proj: Projection,
    q_norm: Option<RmsNorm>,
    k_norm: Option<RmsNorm>,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
}

impl SelfAttention {
    /// Loads `{prefix}.attn_{q,k,v,output}` (and biases, norms when the config says so).
    pub fn load(weights: &dyn WeightSource, cfg: &ModelConfig, prefix: &str) -> Result<Self> {
        let (h, d) = (cfg.hidden_size, cfg.head_dim);
        let q_dim = cfg.num_heads * d;
        let kv_dim = cfg.num_kv_heads * d;
        let projection = |name: &str, out: usize| -> Result<Projection> {
            let weight = weights.linear(&format!("{prefix}.{name}.weight"), out, h)?;
            let bias = if cfg.attention_bias {
                Some(weights.vector(&format!("{prefix}.{name}.bias"), out)?)
            } else {
                None
            };
            Ok(Projection::new(weight, bias))
        };
        let qkv = if weights.contains(&format!("{prefix}.attn_qkv.weight")) {
            projection("attn_qkv", q_dim + 2 * kv_dim)?
        } else {
            let parts = vec![
                projection("attn_q", q_dim)?,
                projection("attn_k", kv_dim)?,
                projection("attn_v", kv_dim)?,
            ];
            Projection::fuse(parts, &[q_dim, kv_dim, kv_dim])?
        };
        let norm = |name: &str| RmsNorm::load_for(weights, cfg, &format!("{prefix}.{name}.weight"), d);
        Ok(Self {
            qkv,
            o_proj: Projection::new(
                weights.linear(&format!("{prefix}.attn_output.weight"), h, q_dim)?,
                cfg.features
                    .attention_output_bias
                    .then(|| weights.vector(&format!("{prefix}.attn_output.bias"), h))
                    .transpose()?,
            ),
            q_norm: if cfg.qk_norm {
                Some(norm("attn_q_norm")?)
            } else {
                None
            },
            k_norm: if cfg.qk_norm {
                Some(norm("attn_k_norm")?)
            } else {
                None
            },
            num_heads: cfg.num_heads,
            num_kv_heads: cfg.num_kv_heads,
            head_dim: d,
        })
    }

    /// Layer `layer` (attending as `settings` say) on `x`, the step's normalised hidden states;
    /// `rotary` holds the step's positions' cos/sin rows and `input` the LoRA groups.
    pub fn forward(
        &self,
        (layer, settings): (usize, &LayerAttention),
        x: &Tensor,
        input: &ModelInput,
        (rotary, fused): (&StepRotary, &FusedOps),
        (meta, kv_cache): (&AttnMetadata, &mut dyn PagedKvCache),
    ) -> Result<Tensor> {
        let lora = &input.lora;
        let q_dim = self.num_heads * self.head_dim;
        let kv_dim = self.num_kv_heads * self.head_dim;
        let qkv = lora.apply(layer, FusedProjection::Qkv, x, self.qkv.forward(x)?)?;
        let q = per_head_norm(
            &qkv.narrow(1, 0, q_dim)?,
            self.q_norm.as_ref(),
            self.head_dim,
        )?;
        let k = per_head_norm(
            &qkv.narrow(1, q_dim, kv_dim)?,
            self.k_norm.as_ref(),
            self.head_dim,
        )?;
        let v = qkv.narrow(1, q_dim + kv_dim, kv_dim)?;
        let heads = QkHeads {
            num_heads: self.num_heads,
            num_kv_heads: self.num_kv_heads,
            head_dim: self.head_dim,
        };
        let (q, k) = fused.rope_qk((&q, &k), rotary, heads)?;
        let attended = kv_cache.attend(layer, (&q, &k, &v), meta, settings)?;
        let out = self.o_proj.forward(&attended)?;
        lora.apply(layer, FusedProjection::O, &attended, out)
    }
}

/// RMS-normalises each head of `x` (`[num_tokens, num_heads * head_dim]`) when a norm is given.
fn per_head_norm(x: &Tensor, norm: Option<&RmsNorm>, head_dim: usize) -> Result<Tensor> {
    let Some(norm) = norm else {
        return Ok(x.clone());
    };
    let (num_tokens, width) = x.dims2()?;
    let heads = x
        .contiguous()?
        .reshape((num_tokens * width / head_dim, head_dim))?;
    Ok(norm.forward(&heads)?.reshape((num_tokens, width))?)
}
