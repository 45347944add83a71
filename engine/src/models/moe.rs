//! The mixture-of-experts feed-forward block (Mixtral, Qwen2-MoE, Qwen3-MoE, gpt-oss): a router
//! picks each token's top-k experts, each expert is a gated MLP, Qwen2-MoE adds a shared expert
//! //! behind a sigmoid gate, and gpt-oss's router and experts carry biases. A step's tokens are
//! grouped by expert: each expert runs once, on all of its rows in one matrix product (gathered,
//! then scattered back with their weights), never once per token. On the CPU the chosen
//! experts' products run as one parallel dispatch per projection ([`grouped_matmul`]).

use candle_core::{DType, Tensor};

use super::features::{Activation, MoeSpec};
use super::fused::FusedOps;
use super::grouped_matmul::{grouped_matmul, Product, QuantizedWeights};
use super::int8::KernelKind;
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
        let mut out = if x.dim(0)? == 0 {
            x.zeros_like()?
        } else {
            let logits = self.router.forward(x)?.to_dtype(DType::F32)?;
            let probs = candle_nn::ops::softmax_last_dim(&logits)?.to_vec2::<f32>()?;
            let routes = self.routes(&probs);
            match self.host_experts(x) {
                Some(experts) => self.experts_grouped(x, &routes, &experts, fused)?,
                None => self.experts_one_by_one(x, &routes, fused)?,
            }
        };
        if let Some((mlp, gate)) = &self.shared {
            let weight = candle_nn::ops::sigmoid(&gate.forward(x)?)?;
            out = (out + mlp.forward_base(x, fused)?.broadcast_mul(&weight)?)?;
        }
        Ok(out)
    }

    /// Every expert's gate/up and down weights when the step can run them grouped: f32 inputs
    /// on the CPU, CPU-quantized experts, no expert biases (gpt-oss's run one by one).
    fn host_experts(&self, x: &Tensor) -> Option<Vec<(QuantizedWeights<'_>, QuantizedWeights<'_>)>> {
        if self.biases.is_some() || !x.device().is_cpu() || x.dtype() != DType::F32 {
            return None;
        }
        self.experts.iter().map(GatedMlp::quantized_parts).collect()
    }

    /// The chosen experts on CPU-quantized weights: those with fewer rows than make the dense
    /// matmul pay (every expert of a decode step) in one grouped gate/up pass, one activation
    /// and one grouped down pass; those with more (long prefill chunks) one by one.
    fn experts_grouped(
        &self,
        x: &Tensor,
        routes: &[Route],
        experts: &[(QuantizedWeights<'_>, QuantizedWeights<'_>)],
        fused: &FusedOps,
    ) -> Result<Tensor> {
        let (num_tokens, hidden) = x.dims2()?;
        let min_rows_dense = KernelKind::detected().min_rows_for_dense_matmul();
        let (few, many): (Vec<usize>, Vec<usize>) = (0..routes.len())
            .filter(|&e| !routes[e].0.is_empty())
            .partition(|&e| routes[e].0.len() < min_rows_dense);
        let x_host = x.flatten_all()?.to_vec1::<f32>()?;
        let mut out = vec![0.0f32; num_tokens * hidden];
        if !few.is_empty() {
            let inputs: Vec<Vec<f32>> = few.iter().map(|&e| gather_rows(&x_host, &routes[e].0, hidden)).collect();
            let gate_up = grouped_matmul(
                &few.iter()
                    .zip(&inputs)
                    .map(|(&e, x)| Product { weights: experts[e].0, x, m: routes[e].0.len() })
                    .collect::<Vec<_>>(),
            )
            .concat();
            let (num_rows, inter) = (inputs.iter().map(|x| x.len() / hidden).sum::<usize>(), self.experts[few[0]].intermediate());
            let activated = self.experts[few[0]]
                .activate(&Tensor::from_vec(gate_up, (num_rows, 2 * inter), x.device())?, fused)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            let mut first = 0;
            let mut products = Vec::with_capacity(few.len());
            for &e in &few {
                let m = routes[e].0.len();
                products.push(Product { weights: experts[e].1, x: &activated[first * inter..(first + m) * inter], m });
                first += m;
            }
            for (&e, y) in few.iter().zip(grouped_matmul(&products)) {
                scatter_weighted(&mut out, &routes[e], &y, hidden);
            }
        }
        for &e in &many {
            let index = Tensor::new(routes[e].0.as_slice(), x.device())?;
            let y = self.experts[e].forward_base(&x.index_select(&index, 0)?, fused)?;
            scatter_weighted(&mut out, &routes[e], &y.flatten_all()?.to_vec1::<f32>()?, hidden);
        }
        Ok(Tensor::from_vec(out, (num_tokens, hidden), x.device())?)
    }

    /// Each chosen expert as its own candle ops (GPU; biased experts).
    fn experts_one_by_one(&self, x: &Tensor, routes: &[Route], fused: &FusedOps) -> Result<Tensor> {
        // Every expert's weighted rows, scattered back in one add at the end (one pass over
        // the output, not one per expert).
        let (mut all_rows, mut outputs) = (Vec::new(), Vec::new());
        for (expert, (rows, weights)) in routes.iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let index = Tensor::new(rows.as_slice(), x.device())?;
            let weights = Tensor::new(weights.as_slice(), x.device())?
                .reshape((rows.len(), 1))?
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
            all_rows.extend_from_slice(rows);
        }
        let index = Tensor::new(all_rows.as_slice(), x.device())?;
        Ok(x.zeros_like()?.index_add(&index, &Tensor::cat(&outputs, 0)?, 0)?)
    }

    /// Per expert: the rows routed to it and their weights (the router's probabilities of each
    /// token's top-k experts, renormalised to sum to 1 when the family says so).
    fn routes(&self, probs: &[Vec<f32>]) -> Vec<Route> {
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

/// The rows routed to one expert and their weights.
type Route = (Vec<u32>, Vec<f32>);

/// Rows `rows` of `x` (rows of `width`), one after another.
fn gather_rows(x: &[f32], rows: &[u32], width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows.len() * width);
    for &row in rows {
        out.extend_from_slice(&x[row as usize * width..(row as usize + 1) * width]);
    }
    out
}

/// Adds each of an expert's output rows (`y`, in route order), times its weight, to its row of `out`.
fn scatter_weighted(out: &mut [f32], (rows, weights): &Route, y: &[f32], width: usize) {
    for ((&row, &weight), y) in rows.iter().zip(weights).zip(y.chunks_exact(width)) {
        let target = &mut out[row as usize * width..(row as usize + 1) * width];
        for (t, v) in target.iter_mut().zip(y) {
            *t += v * weight;
        }
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

#[cfg(test)]
mod tests {
    use candle_core::quantized::QMatMul;
    use candle_core::Device;

    use super::*;
    use crate::models::int8::Int8Matrix;

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| (((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0) * 0.2).collect()
    }

    fn int8(rows: usize, cols: usize, seed: usize) -> Linear {
        Linear::Int8(Int8Matrix::quantize(&values(rows * cols, seed), rows, cols).expect("quantize"))
    }

    /// Eight int8 experts of hidden 64 and width 32, top-3, on the CPU.
    fn block(activation: Activation) -> MoeBlock {
        let (hidden, inter, num_experts) = (64, 32, 8);
        let experts = (0..num_experts)
            .map(|e| {
                let parts = (int8(inter, hidden, 3 * e), int8(inter, hidden, 3 * e + 1), int8(hidden, inter, 3 * e + 2));
                GatedMlp::from_parts(parts, inter, activation).expect("expert")
            })
            .collect();
        let router = Tensor::from_vec(values(num_experts * hidden, 99), (num_experts, hidden), &Device::Cpu).expect("router");
        MoeBlock {
            router: Projection::new(Linear::Candle(QMatMul::Tensor(router)), None),
            experts,
            biases: None,
            shared: None,
            spec: MoeSpec {
                num_experts,
                num_experts_per_tok: 3,
                expert_intermediate_size: inter,
                norm_topk_prob: true,
                shared_expert_intermediate_size: None,
                biased: false,
            },
        }
    }

    /// The grouped CPU path gives what each expert's own candle ops give, for a decode-sized
    /// step (every expert grouped) and a prefill chunk long enough that some experts run alone.
    #[test]
    fn grouped_experts_match_experts_one_by_one() {
        let fused = FusedOps::default();
        for activation in [Activation::Silu, Activation::GeluTanh] {
            let block = block(activation);
            for num_tokens in [1, 5, 400] {
                let x = Tensor::from_vec(values(num_tokens * 64, num_tokens), (num_tokens, 64), &Device::Cpu).expect("x");
                let probs = candle_nn::ops::softmax_last_dim(&block.router.forward(&x).expect("router"))
                    .and_then(|p| p.to_vec2::<f32>())
                    .expect("probs");
                let routes = block.routes(&probs);
                let experts = block.host_experts(&x).expect("int8 experts on the CPU run grouped");
                let grouped = block.experts_grouped(&x, &routes, &experts, &fused).expect("grouped");
                let alone = block.experts_one_by_one(&x, &routes, &fused).expect("one by one");
                let (grouped, alone) = (grouped.to_vec2::<f32>().expect("grouped"), alone.to_vec2::<f32>().expect("alone"));
                let scale = alone.iter().flatten().fold(0.0f32, |m, v| m.max(v.abs()));
                assert!(scale > 1e-3, "the block's outputs are not all ~zero");
                for (g, a) in grouped.iter().flatten().zip(alone.iter().flatten()) {
                    assert!((g - a).abs() <= 1e-5 * scale, "{activation:?}, {num_tokens} tokens: {g} vs {a}");
                }
            }
        }
    }

    #[test]
    fn dense_or_biased_experts_do_not_run_grouped() {
        let x = Tensor::zeros((2, 64), DType::F32, &Device::Cpu).expect("x");
        let mut block = block(Activation::Silu);
        assert!(block.host_experts(&x).is_some());
        block.biases = Some(Vec::new());
        assert!(block.host_experts(&x).is_none());
        let mut block = self::block(Activation::Silu);
        let dense = Tensor::zeros((64, 64), DType::F32, &Device::Cpu).expect("dense");
        block.experts[3] = GatedMlp::from_parts(
            (Linear::Candle(QMatMul::Tensor(dense.narrow(0, 0, 32).expect("gate"))), Linear::Candle(QMatMul::Tensor(dense.narrow(0, 32, 32).expect("up"))), int8(64, 32, 0)),
            32,
            Activation::Silu,
        )
        .expect("expert");
        assert!(block.host_experts(&x).is_none());
    }
}
