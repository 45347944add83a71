//! Converts a GGUF Llama model into a Hugging Face directory (`config.json`, `model.safetensors`
//! with f32 weights, `generation_config.json`), so tests can run the same weights through both
//! loaders ([`last_token_logits`] runs one prefill of either). The tokenizer files are the
//! text crate's business (`pagoda_text::hf_files`).
//!
//! llama.cpp's converter reorders the rows of `q_proj` and `k_proj`, head by head, so that its
//! RoPE, which rotates adjacent pairs of dimensions `(2i, 2i+1)`, computes what Hugging Face's
//! RoPE computes by rotating dimension `i` against `i + head_dim/2`. Within a head, Hugging Face
//! row `s * head_dim/2 + i` (`s` = 0 for the first half, 1 for the second) is llama.cpp row
//! `2i + s`. Writing Hugging Face weights undoes that reordering ([`unpermute_qk_rows`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use candle_core::quantized::gguf_file::Content;
use candle_core::{Device, Tensor};
use serde_json::json;

use crate::attention::CpuKvCache;
use crate::batch::{BatchPlan, ScheduledSeq};
use crate::error::{EngineError, Result};
use crate::kv::BlockId;
use crate::models::config::ModelConfig;
use crate::models::gguf::GgufFile;
use crate::models::{load_model, WeightFormat};
use crate::request::RequestId;
use crate::runner::ModelRunner;

fn convert_error(path: &Path, message: impl std::fmt::Display) -> EngineError {
    EngineError::model_load(format!("{}: {message}", path.display()))
}

/// Writes `out_dir/{config.json, model.safetensors, generation_config.json}` for the Llama GGUF
/// at `gguf`, every tensor dequantized to f32. `out_dir` is created when missing.
pub fn convert_gguf_to_hf(gguf: &Path, out_dir: &Path) -> Result<()> {
    let file = GgufFile::open(gguf, &Device::Cpu, WeightFormat::F32)?;
    let architecture = file.architecture()?;
    if architecture != "llama" {
        return Err(convert_error(
            gguf,
            format!("only `llama` GGUF files convert, not `{architecture}`"),
        ));
    }
    let config = crate::models::architecture::gguf_model_config(&file)?;
    drop(file);
    let tensors = hf_tensors(gguf, &config)?;
    std::fs::create_dir_all(out_dir).map_err(|e| convert_error(out_dir, e))?;
    candle_core::safetensors::save(&tensors, out_dir.join("model.safetensors"))?;
    let tie_word_embeddings = !tensors.contains_key("lm_head.weight");
    let attention_bias = tensors.contains_key("model.layers.0.self_attn.q_proj.bias");
    write_json(
        &out_dir.join("config.json"),
        &config_json(&config, tie_word_embeddings, attention_bias),
    )?;
    write_json(
        &out_dir.join("generation_config.json"),
        &json!({
            "bos_token_id": config.bos_token_id,
            "eos_token_id": eos_json(&config.eos_token_ids),
        }),
    )
}

/// Every tensor of the file under its Hugging Face name, as f32, q and k rows un-permuted.
fn hf_tensors(gguf: &Path, config: &ModelConfig) -> Result<HashMap<String, Tensor>> {
    let mut reader = BufReader::new(File::open(gguf).map_err(|e| convert_error(gguf, e))?);
    let content = Content::read(&mut reader).map_err(|e| convert_error(gguf, e))?;
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let mut tensors = HashMap::with_capacity(names.len());
    for name in names {
        let hf_name = hf_tensor_name(name).ok_or_else(|| {
            convert_error(gguf, format!("tensor `{name}` has no Hugging Face name"))
        })?;
        let tensor = content
            .tensor(&mut reader, name, &Device::Cpu)?
            .dequantize(&Device::Cpu)?;
        let tensor = if hf_name.contains(".self_attn.q_proj.") {
            unpermute_qk_rows(&tensor, config.num_heads)?
        } else if hf_name.contains(".self_attn.k_proj.") {
            unpermute_qk_rows(&tensor, config.num_kv_heads)?
        } else {
            tensor
        };
        tensors.insert(hf_name, tensor);
    }
    Ok(tensors)
}

pub use crate::models::families::llama_tensor_name as hf_tensor_name;

pub use crate::models::qk_rows::{permute_qk_rows, unpermute_qk_rows};

/// The logits of the last token of `prompt` after one prefill of the model at `path` (a GGUF
/// file or a Hugging Face directory) on the CPU: how tests compare two forms of one model.
pub fn last_token_logits(
    path: &Path,
    weight_format: WeightFormat,
    prompt: &[u32],
) -> Result<Vec<f32>> {
    let model = load_model(path, &Device::Cpu, weight_format)?;
    prefill_last_token_logits(model, prompt, None)
}

/// The logits of the last token of `prompt` after one prefill of `model` on the CPU, every row
/// with `lora` when given.
pub fn prefill_last_token_logits(
    model: Box<dyn crate::models::CausalLm>,
    prompt: &[u32],
    lora: Option<std::sync::Arc<crate::lora::adapter::LoraAdapter>>,
) -> Result<Vec<f32>> {
    const BLOCK_SIZE: usize = 16;
    let config = model.config();
    let num_blocks = prompt.len().div_ceil(BLOCK_SIZE);
    let cache = CpuKvCache::new(
        config.num_layers,
        config.attn_shape(),
        BLOCK_SIZE,
        num_blocks,
    );
    let mut runner = ModelRunner::new(model, Box::new(cache), BLOCK_SIZE);
    Ok(runner
        .execute(&prefill_plan(prompt, BLOCK_SIZE, lora))?
        .values)
}

/// One sequence's whole `prompt` as one step, in blocks `0..` of `block_size`, sampling its
/// last token.
pub fn prefill_plan(
    prompt: &[u32],
    block_size: usize,
    lora: Option<std::sync::Arc<crate::lora::adapter::LoraAdapter>>,
) -> BatchPlan {
    let num_blocks = prompt.len().div_ceil(block_size);
    BatchPlan {
        seqs: vec![ScheduledSeq {
            id: RequestId(0),
            num_computed_tokens: 0,
            new_token_ids: prompt.to_vec(),
            num_draft_tokens: 0,
            block_table: (0..num_blocks as u32).map(BlockId).collect(),
            sample: true,
            lora,
            prompt_logprobs: None,
        }],
        num_batched_tokens: prompt.len(),
    }
}

fn eos_json(ids: &[u32]) -> serde_json::Value {
    match ids {
        [] => serde_json::Value::Null,
        [id] => json!(id),
        ids => json!(ids),
    }
}

fn config_json(config: &ModelConfig, tie: bool, attention_bias: bool) -> serde_json::Value {
    json!({
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.head_dim,
        "hidden_act": "silu",
        // The GGUF's f32 epsilon, widened exactly, so both loaders use the same value.
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "rope_scaling": null,
        "max_position_embeddings": config.context_length,
        "tie_word_embeddings": tie,
        "attention_bias": attention_bias,
        "mlp_bias": false,
        "bos_token_id": config.bos_token_id,
        "eos_token_id": eos_json(&config.eos_token_ids),
        "torch_dtype": "float32",
    })
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| convert_error(path, e))?;
    std::fs::write(path, text).map_err(|e| convert_error(path, e))
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::GgmlDType;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::models::rotary::RotaryEmbedding;
    use crate::testing::TinyLlamaSpec;

    fn random(dims: &[usize], seed: u64) -> Tensor {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let count = dims.iter().product();
        let values: Vec<f32> = (0..count).map(|_| rng.random_range(-1.0..1.0)).collect();
        Tensor::from_vec(values, dims, &Device::Cpu).expect("tensor")
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .and_then(|d| d.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>())
            .expect("same shapes")
    }

    #[test]
    fn the_row_order_within_a_head_is_pairs_versus_halves() {
        // One head of dimension 6: Hugging Face rows (x0 x1 x2 | y0 y1 y2) are llama.cpp's
        // (x0 y0 x1 y1 x2 y2), so that each rotated pair sits side by side.
        let hf = Tensor::new(&[0f32, 1., 2., 10., 11., 12.], &Device::Cpu).expect("tensor");
        let llama_cpp = permute_qk_rows(&hf, 1).expect("permute");
        let rows = llama_cpp.to_vec1::<f32>().expect("values");
        assert_eq!(rows, [0., 10., 1., 11., 2., 12.]);
        let back = unpermute_qk_rows(&llama_cpp, 1).expect("unpermute");
        assert_eq!(
            back.to_vec1::<f32>().expect("values"),
            [0., 1., 2., 10., 11., 12.]
        );
    }

    #[test]
    fn unpermute_inverts_permute_head_by_head() {
        for (heads, head_dim, cols, seed) in [(3, 8, 5, 1), (1, 64, 7, 2), (9, 64, 3, 3)] {
            let hf = random(&[heads * head_dim, cols], seed);
            let permuted = permute_qk_rows(&hf, heads).expect("permute");
            assert!(
                max_abs_diff(&permuted, &hf) > 0.0,
                "the permutation moves rows"
            );
            let back = unpermute_qk_rows(&permuted, heads).expect("unpermute");
            assert_eq!(max_abs_diff(&back, &hf), 0.0, "{heads} heads of {head_dim}");
            // The other way round too: unpermute is a bijection.
            let there = permute_qk_rows(&unpermute_qk_rows(&hf, heads).expect("u"), heads);
            assert_eq!(max_abs_diff(&there.expect("p"), &hf), 0.0);
        }
        assert!(unpermute_qk_rows(&random(&[10, 2], 0), 3).is_err());
    }

    fn rope_config(interleaved: bool, num_heads: usize, head_dim: usize) -> ModelConfig {
        ModelConfig {
            architecture: "llama".into(),
            vocab_size: 16,
            hidden_size: num_heads * head_dim,
            intermediate_size: 16,
            num_layers: 1,
            num_heads,
            num_kv_heads: num_heads,
            head_dim,
            rms_norm_eps: 1e-5,
            rope_theta: 10_000.0,
            rope_interleaved: interleaved,
            rope_scaling: None,
            context_length: 256,
            attention_bias: false,
            qk_norm: false,
            sliding_window: None,
            bos_token_id: None,
            eos_token_ids: Vec::new(),
            sampling_defaults: Default::default(),
            features: Default::default(),
        }
    }

    #[test]
    fn interleaved_rope_on_permuted_weights_is_half_rope_on_the_original() {
        let (heads, head_dim, hidden) = (3, 16, 20);
        let w_hf = random(&[heads * head_dim, hidden], 11);
        let w_llama_cpp = permute_qk_rows(&w_hf, heads).expect("permute");
        let x = random(&[5, hidden], 12);
        let positions = Tensor::new(&[0u32, 1, 7, 30, 200], &Device::Cpu).expect("positions");
        let rope = |interleaved: bool, w: &Tensor| {
            let rotary = RotaryEmbedding::new(
                &rope_config(interleaved, heads, head_dim),
                &Device::Cpu,
                candle_core::DType::F32,
            )
            .expect("rotary");
            let q = x.matmul(&w.t().expect("t")).expect("matmul");
            rotary.apply(&q, &positions, heads).expect("rope")
        };
        let halves = rope(false, &w_hf);
        let pairs = rope(true, &w_llama_cpp);
        // Same values, with each head's columns in llama.cpp's order.
        let pairs_in_hf_order = unpermute_qk_rows(&pairs.t().expect("t"), heads)
            .and_then(|t| Ok(t.t()?))
            .expect("unpermute");
        assert!(max_abs_diff(&pairs_in_hf_order, &halves) < 1e-5);
        // Without the permutation the two forms disagree: the test can fail.
        let unpermuted = rope(true, &w_hf);
        assert!(max_abs_diff(&unpermuted, &halves) > 1e-2);
    }

    #[test]
    fn a_converted_tiny_model_gives_the_same_logits() {
        let prompt: Vec<u32> = (1..40).map(|i| (i * 37 % 255) as u32).collect();
        let specs = [
            TinyLlamaSpec::default(),
            TinyLlamaSpec {
                dtype: GgmlDType::Q8_0,
                tie_embeddings: false,
                eos_token_id: 3,
                ..TinyLlamaSpec::default()
            },
        ];
        for spec in specs {
            let dir = tempfile::tempdir().expect("temp dir");
            let gguf = dir.path().join("tiny.gguf");
            spec.write_gguf(&gguf).expect("writes");
            let hf = dir.path().join("hf");
            convert_gguf_to_hf(&gguf, &hf).expect("converts");
            let config: serde_json::Value =
                serde_json::from_slice(&std::fs::read(hf.join("config.json")).expect("config"))
                    .expect("json");
            assert_eq!(config["tie_word_embeddings"], spec.tie_embeddings);
            assert_eq!(config["eos_token_id"], spec.eos_token_id);
            assert_eq!(config["num_key_value_heads"], spec.num_kv_heads);
            let want = last_token_logits(&gguf, WeightFormat::F32, &prompt).expect("runs");
            let got = last_token_logits(&hf, WeightFormat::F32, &prompt).expect("runs");
            let diff = want.iter().zip(&got).map(|(a, b)| (a - b).abs());
            let max_diff = diff.fold(0f32, f32::max);
            assert!(
                max_diff < 1e-4,
                "{:?}: max logit difference {max_diff}",
                spec.dtype
            );
        }
    }

    #[test]
    fn names_map_to_transformers_names() {
        assert_eq!(
            hf_tensor_name("blk.12.attn_k.weight").as_deref(),
            Some("model.layers.12.self_attn.k_proj.weight")
        );
        assert_eq!(
            hf_tensor_name("blk.0.ffn_norm.weight").as_deref(),
            Some("model.layers.0.post_attention_layernorm.weight")
        );
        assert_eq!(
            hf_tensor_name("output.weight").as_deref(),
            Some("lm_head.weight")
        );
        assert_eq!(hf_tensor_name("rope_freqs.weight"), None);
        assert_eq!(hf_tensor_name("blk.x.attn_q.weight"), None);
    }
}
