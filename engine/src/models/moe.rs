//! The mixture-of-experts feed-forward block (Mixtral, Qwen2-MoE, Qwen3-MoE, gpt-oss): a router
//! picks each token's top-k experts, each expert is a gated MLP, Qwen2-MoE adds a shared expert
//! behind a sigmoid gate, and gpt-oss's router and experts carry biases. A step's tokens are grouped by expert: each expert runs once, on all
//! of its rows in one matrix product (gathered, then scattered back with their weights), never
//! once per token.

use candle_core::{DType, Tensor};

use super::features::{Activation, MoeSpec};
use super::fused::FusedOps;
use super::layers::GatedMlp;
use super::linear::{Linear, Projection};
use super::weights::WeightSource;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct MoeBlock {
    /// `[num_experts, hidden]` (and a bias, gpt-oss): the router's logits, in the compute dtype
    /// whatever the weight format (as llama.cpp keeps `ffn_gate_inp` in F32 and vLLM leaves the
    /// gate unquantized: a quantized router moves tokens to other experts).
    router: Projection,
    experts: Vec<GatedMlp>,
    /// gpt-oss: each expert's gate/up bias (`[2 · inter]`, the gate's first) and down bias.
    biases: Option<Vec<(Tensor, Tensor)>>,
    /// Qwen2-MoE's shared expert and its `[1, hidden]` gate.
    shared: Option<(GatedMlp, Linear)>,
    spec: MoeSpec,
}

impl MoeBlock {
    /// Loads `{prefix}.ffn_gate_inp` (router), `{prefix}.ffn_{gate,up,down}_exps` (the experts,
    /// stacked) and, with a shared expert, `{prefix}.ffn_{gate,up,down}_shexp` and its gate
    /// `{prefix}.ffn_gate_inp_shexp`.
    pub fn load(
        weights: &dyn WeightSource,
        prefix: &str,
        hidden: usize,
        (spec, activation): (&MoeSpec, Activation),
    ) -> Result<Self> {
        let (num_experts, inter) = (spec.num_experts, spec.expert_intermediate_size);
        let stacked = |part: &str, out: usize, input: usize| {
            weights.experts(&format!("{prefix}.ffn_{part}_exps.weight"), num_experts, out, input)
        };
        let gates = stacked("gate", inter, hidden)?;
        let ups = stacked("up", inter, hidden)?;
        let downs = stacked("down", hidden, inter)?;
        let experts = gates
            .into_iter()
            .zip(ups)
            .zip(downs)
            .map(|((gate, up), down)| GatedMlp::from_parts((gate, up, down), inter, activation))
            .collect::<Result<Vec<_>>>()?;
        let biases = spec
            .biased
            .then(|| expert_biases(weights, prefix, hidden, spec))
            .transpose()?;
        let router_bias = spec
            .biased
            .then(|| weights.vector(&format!("{prefix}.ffn_gate_inp.bias"), num_experts))
            .transpose()?;
        let shared = match spec.shared_expert_intermediate_size {
            Some(shared_inter) => {
                let mlp = GatedMlp::load_named(
                    weights,
                    (prefix, "_shexp"),
                    (hidden, shared_inter),
                    activation,
                )?;
                let gate = weights.linear(&format!("{prefix}.ffn_gate_inp_shexp.weight"), 1, hidden)?;
                Some((mlp, gate))
            }
            None => None,
        };
        Ok(Self {
            router: Projection::new(
                weights.dense_linear(&format!("{prefix}.ffn_gate_inp.weight"), num_experts, hidden)?,
                router_bias,
            ),
            experts,
            biases,
            shared,
            spec: spec.clone(),
        })
    }

    /// `x`: `[num_tokens, hidden]` normalised hidden states.
    pub fn forward(&self, x: &Tensor, fused: &FusedOps) -> Result<Tensor> {
        let num_tokens = x.dim(0)?;
        let mut out = x.zeros_like()?;
        if num_tokens > 0 {
            let logits = self.router.forward(x)?.to_dtype(DType::F32)?;
            let probs = candle_nn::ops::softmax_last_dim(&logits)?.to_vec2::<f32>()?;
            // Every expert's weighted rows, scattered back in one add at the end (one pass over
            // the output, not one per expert).
            let (mut all_rows, mut outputs) = (Vec::new(), Vec::new());
            for (expert, (rows, weights)) in self.routes(&probs).into_iter().enumerate() {
                if rows.is_empty() {
                    continue;
                }
                let index = Tensor::new(rows.as_slice(), x.device())?;
                let weights = Tensor::from_vec(weights, (rows.len(), 1), x.device())?
                    .to_dtype(x.dtype())?;
                let inputs = x.index_select(&index, 0)?;
                let y = match &self.biases {
                    Some(biases) => {
                        let (gate_up, down) = &biases[expert];
                        self.experts[expert].forward_biased(&inputs, (gate_up, down), fused)?
                    }
                    None => self.experts[expert].forward_base(&inputs, fused)?,
                };
                outputs.push(y.broadcast_mul(&weights)?);
                all_rows.extend(rows);
            }
            let index = Tensor::new(all_rows.as_slice(), x.device())?;
            out = out.index_add(&index, &Tensor::cat(&outputs, 0)?, 0)?;
        }
        if let Some((mlp, gate)) = &self.shared {
            let weight = candle_nn::ops::sigmoid(&gate.forward(x)?)?;
            out = (out + mlp.forward_base(x, fused)?.broadcast_mul(&weight)?)?;
        }
        Ok(out)
    }

    /// Per expert: the rows routed to it and their weights (the router's probabilities of each
    /// token's top-k experts, renormalised to sum to 1 when the family says so).
    fn routes(&self, probs: &[Vec<f32>]) -> Vec<(Vec<u32>, Vec<f32>)> {
        let mut routes = vec![(Vec::new(), Vec::new()); self.spec.num_experts];
        for (row, p) in probs.iter().enumerate() {
            let mut order: Vec<usize> = (0..p.len()).collect();
            order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
            let chosen = &order[..self.spec.num_experts_per_tok.min(order.len())];
            let total: f32 = chosen.iter().map(|&e| p[e]).sum();
            let norm = if self.spec.norm_topk_prob && total > 0.0 { total } else { 1.0 };
            for &expert in chosen {
                routes[expert].0.push(row as u32);
                routes[expert].1.push(p[expert] / norm);
            }
        }
        routes
    }
}


/// Every expert's `(gate|up, down)` biases from the stacked `{prefix}.ffn_{gate,up,down}_exps.bias`.
fn expert_biases(
    weights: &dyn WeightSource,
    prefix: &str,
    hidden: usize,
    spec: &MoeSpec,
) -> Result<Vec<(Tensor, Tensor)>> {
    let (num_experts, inter) = (spec.num_experts, spec.expert_intermediate_size);
    let stacked = |part: &str, len: usize| {
        weights.expert_biases(&format!("{prefix}.ffn_{part}_exps.bias"), num_experts, len)
    };
    let gate_up = Tensor::cat(&[stacked("gate", inter)?, stacked("up", inter)?], 1)?;
    let down = stacked("down", hidden)?;
    (0..num_experts)
        .map(|e| Ok((gate_up.get(e)?, down.get(e)?)))
        .collect()
}
