//! A dense reference decoder for Hugging Face Llama/Mistral/Qwen2/Qwen3 checkpoints: no paging, no
//! KV cache, f64 arithmetic in plain loops over `Vec`s. It is written from the published equations
//! (not from the engine's code) so that the engine can be checked against it.

use std::collections::HashMap;

use candle_core::{DType, Tensor};
use serde_json::Value;

/// The parts of config.json the equations need.
struct Config {
    hidden: usize,
    num_layers: usize,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    eps: f64,
    qkv_bias: bool,
    qk_norm: bool,
    sliding_window: Option<usize>,
    tied: bool,
    inv_freq: Vec<f64>,
}

fn get_usize(config: &Value, key: &str) -> Option<usize> {
    config.get(key).and_then(Value::as_u64).map(|v| v as usize)
}

fn get_f64(config: &Value, key: &str) -> Option<f64> {
    config.get(key).and_then(Value::as_f64)
}

impl Config {
    fn parse(config: &Value) -> Self {
        let arch = config["architectures"][0].as_str().expect("architectures");
        let hidden = get_usize(config, "hidden_size").expect("hidden_size");
        let num_heads = get_usize(config, "num_attention_heads").expect("num_attention_heads");
        let head_dim = get_usize(config, "head_dim").unwrap_or(hidden / num_heads);
        let explicit_bias = config.get("attention_bias").and_then(Value::as_bool);
        Config {
            hidden,
            num_layers: get_usize(config, "num_hidden_layers").expect("num_hidden_layers"),
            num_heads,
            num_kv_heads: get_usize(config, "num_key_value_heads").unwrap_or(num_heads),
            head_dim,
            eps: get_f64(config, "rms_norm_eps").unwrap_or(1e-6),
            qkv_bias: arch == "Qwen2ForCausalLM" || explicit_bias == Some(true),
            qk_norm: arch == "Qwen3ForCausalLM",
            sliding_window: if arch == "MistralForCausalLM" {
                get_usize(config, "sliding_window")
            } else {
                None
            },
            tied: config["tie_word_embeddings"].as_bool().unwrap_or(false),
            inv_freq: rope_inverse_frequencies(config, head_dim),
        }
    }
}

/// θ_i = base^(-2i/d), then the `rope_scaling` variant's change of frequencies.
pub fn rope_inverse_frequencies(config: &Value, head_dim: usize) -> Vec<f64> {
    let base = get_f64(config, "rope_theta").unwrap_or(10_000.0);
    let d = head_dim as f64;
    let scaling = config.get("rope_scaling").filter(|s| !s.is_null());
    let kind = scaling
        .and_then(|s| s.get("rope_type").or_else(|| s.get("type")))
        .and_then(Value::as_str)
        .unwrap_or("default");
    let param = |key: &str| -> f64 {
        get_f64(scaling.expect("rope_scaling"), key).expect("rope_scaling parameter")
    };
    // Dynamic NTK (as vLLM serves it): the base grows as if the context were max_pos·factor.
    // base' = base · (factor·(max_pos·factor)/max_pos − (factor − 1))^(d/(d−2)).
    let base = if kind == "dynamic" {
        let factor = param("factor");
        base * (factor * factor - (factor - 1.0)).powf(d / (d - 2.0))
    } else {
        base
    };
    let plain = (0..head_dim / 2).map(|i| base.powf(-2.0 * i as f64 / d));
    match kind {
        "linear" => plain.map(|f| f / param("factor")).collect(),
        "llama3" => plain.map(|f| llama3_frequency(f, &param)).collect(),
        _ => plain.collect(),
    }
}

/// Llama 3.1: wavelengths shorter than original/high_freq_factor are kept, longer than
/// original/low_freq_factor are divided by `factor`, and those in between are interpolated
/// linearly in original/wavelength.
fn llama3_frequency(freq: f64, param: &dyn Fn(&str) -> f64) -> f64 {
    let factor = param("factor");
    let low = param("low_freq_factor");
    let high = param("high_freq_factor");
    let original = param("original_max_position_embeddings");
    let wavelength = 2.0 * std::f64::consts::PI / freq;
    if wavelength < original / high {
        freq
    } else if wavelength > original / low {
        freq / factor
    } else {
        let t = (original / wavelength - low) / (high - low);
        (1.0 - t) * freq / factor + t * freq
    }
}

/// Weights as f64 vectors (row-major), by Hugging Face name.
struct Weights(HashMap<String, Vec<f64>>);

impl Weights {
    fn new(weights: &HashMap<String, Tensor>) -> Self {
        let read = |t: &Tensor| -> Vec<f64> {
            let values = t
                .to_dtype(DType::F64)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1::<f64>());
            values.expect("a float tensor")
        };
        Weights(weights.iter().map(|(k, t)| (k.clone(), read(t))).collect())
    }

    fn get(&self, name: &str) -> &[f64] {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("missing weight {name}"))
    }
}

/// `W · x (+ b)` for `W` of shape `[out, in]`.
fn project(w: &[f64], b: Option<&[f64]>, x: &[f64]) -> Vec<f64> {
    let out = w.len() / x.len();
    (0..out)
        .map(|r| {
            let row = &w[r * x.len()..(r + 1) * x.len()];
            let dot: f64 = row.iter().zip(x).map(|(a, b)| a * b).sum();
            dot + b.map_or(0.0, |b| b[r])
        })
        .collect()
}

/// x / sqrt(mean(x²) + eps) · w
fn rms_norm(x: &[f64], w: &[f64], eps: f64) -> Vec<f64> {
    let mean_square = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let inv = 1.0 / (mean_square + eps).sqrt();
    x.iter().zip(w).map(|(v, w)| v * inv * w).collect()
}

/// Rotate-half RoPE of one head at `position`: pairs are (i, i + d/2).
fn rope(head: &mut [f64], position: usize, inv_freq: &[f64]) {
    let half = head.len() / 2;
    for (i, f) in inv_freq.iter().enumerate() {
        let (sin, cos) = (position as f64 * f).sin_cos();
        let (a, b) = (head[i], head[i + half]);
        head[i] = a * cos - b * sin;
        head[i + half] = b * cos + a * sin;
    }
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// Per token: q `[heads·d]`, k and v `[kv_heads·d]`, after biases, q/k norms and RoPE.
fn qkv(cfg: &Config, w: &Weights, p: &str, xs: &[Vec<f64>]) -> Vec<[Vec<f64>; 3]> {
    let bias = |name: &str| cfg.qkv_bias.then(|| w.get(&format!("{p}.{name}.bias")));
    let d = cfg.head_dim;
    xs.iter()
        .enumerate()
        .map(|(pos, x)| {
            let mut q = project(w.get(&format!("{p}.q_proj.weight")), bias("q_proj"), x);
            let mut k = project(w.get(&format!("{p}.k_proj.weight")), bias("k_proj"), x);
            let v = project(w.get(&format!("{p}.v_proj.weight")), bias("v_proj"), x);
            for (t, norm) in [(&mut q, "q_norm"), (&mut k, "k_norm")] {
                for head in t.chunks_mut(d) {
                    if cfg.qk_norm {
                        let normed = rms_norm(head, w.get(&format!("{p}.{norm}.weight")), cfg.eps);
                        head.copy_from_slice(&normed);
                    }
                    rope(head, pos, &cfg.inv_freq);
                }
            }
            [q, k, v]
        })
        .collect()
}

/// Causal grouped-query attention over all tokens, then the output projection.
fn attention(cfg: &Config, w: &Weights, layer: usize, xs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let p = format!("model.layers.{layer}.self_attn");
    let qkv = qkv(cfg, w, &p, xs);
    let d = cfg.head_dim;
    let group = cfg.num_heads / cfg.num_kv_heads;
    let scale = 1.0 / (d as f64).sqrt();
    (0..xs.len())
        .map(|pos| {
            let first = cfg
                .sliding_window
                .map_or(0, |w| (pos + 1).saturating_sub(w));
            let mut out = vec![0.0; cfg.num_heads * d];
            for h in 0..cfg.num_heads {
                let kv = h / group;
                let q = &qkv[pos][0][h * d..(h + 1) * d];
                let scores: Vec<f64> = (first..=pos)
                    .map(|j| {
                        let k = &qkv[j][1][kv * d..(kv + 1) * d];
                        q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>() * scale
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f64 = exps.iter().sum();
                for (j, e) in (first..=pos).zip(&exps) {
                    let v = &qkv[j][2][kv * d..(kv + 1) * d];
                    for (o, v) in out[h * d..(h + 1) * d].iter_mut().zip(v) {
                        *o += e / total * v;
                    }
                }
            }
            project(w.get(&format!("{p}.o_proj.weight")), None, &out)
        })
        .collect()
}

/// down(silu(gate·x) ⊙ up·x)
fn mlp(w: &Weights, layer: usize, x: &[f64]) -> Vec<f64> {
    let p = format!("model.layers.{layer}.mlp");
    let gate = project(w.get(&format!("{p}.gate_proj.weight")), None, x);
    let up = project(w.get(&format!("{p}.up_proj.weight")), None, x);
    let hidden: Vec<f64> = gate.iter().zip(&up).map(|(g, u)| silu(*g) * u).collect();
    project(w.get(&format!("{p}.down_proj.weight")), None, &hidden)
}

fn add_in_place(x: &mut [Vec<f64>], delta: &[Vec<f64>]) {
    for (row, d) in x.iter_mut().zip(delta) {
        for (a, b) in row.iter_mut().zip(d) {
            *a += b;
        }
    }
}

/// Logits at every position of `tokens` (one causal pass over the whole sequence).
pub fn dense_logits(
    config_json: &Value,
    weights: &HashMap<String, Tensor>,
    tokens: &[u32],
) -> Vec<Vec<f32>> {
    let cfg = Config::parse(config_json);
    let w = Weights::new(weights);
    let embed = w.get("model.embed_tokens.weight");
    let h = cfg.hidden;
    let mut x: Vec<Vec<f64>> = tokens
        .iter()
        .map(|&t| embed[t as usize * h..(t as usize + 1) * h].to_vec())
        .collect();
    for layer in 0..cfg.num_layers {
        let p = format!("model.layers.{layer}");
        let input_norm = w.get(&format!("{p}.input_layernorm.weight"));
        let normed: Vec<Vec<f64>> = x.iter().map(|r| rms_norm(r, input_norm, cfg.eps)).collect();
        add_in_place(&mut x, &attention(&cfg, &w, layer, &normed));
        let post_norm = w.get(&format!("{p}.post_attention_layernorm.weight"));
        let mlp_out: Vec<Vec<f64>> = x
            .iter()
            .map(|r| mlp(&w, layer, &rms_norm(r, post_norm, cfg.eps)))
            .collect();
        add_in_place(&mut x, &mlp_out);
    }
    let head = if cfg.tied {
        embed
    } else {
        w.get("lm_head.weight")
    };
    let final_norm = w.get("model.norm.weight");
    x.iter()
        .map(|r| {
            let logits = project(head, None, &rms_norm(r, final_norm, cfg.eps));
            logits.into_iter().map(|v| v as f32).collect()
        })
        .collect()
}

/// The two best token ids' gap: how clearly the argmax wins.
pub fn top2_margin(logits: &[f32]) -> (u32, f32) {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    (order[0] as u32, logits[order[0]] - logits[order[1]])
}
