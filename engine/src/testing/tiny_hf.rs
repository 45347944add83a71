//! Tiny random-weight Hugging Face model directories (config.json + safetensors, single-file or
//! sharded) for every family the engine serves, written at test time so that the loader and the
//! model code can be checked against an independent reference on the very same weights.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::error::{EngineError, Result};

/// The model families of `config.json`'s `architectures`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Llama,
    Mistral,
    /// q/k/v projections carry biases.
    Qwen2,
    /// Per-head q/k RMS norm before RoPE; explicit `head_dim`.
    Qwen3,
}

impl Family {
    pub fn architecture(self) -> &'static str {
        match self {
            Family::Llama => "LlamaForCausalLM",
            Family::Mistral => "MistralForCausalLM",
            Family::Qwen2 => "Qwen2ForCausalLM",
            Family::Qwen3 => "Qwen3ForCausalLM",
        }
    }

    pub fn model_type(self) -> &'static str {
        match self {
            Family::Llama => "llama",
            Family::Mistral => "mistral",
            Family::Qwen2 => "qwen2",
            Family::Qwen3 => "qwen3",
        }
    }
}

/// The shape, options and on-disk dtype of a tiny Hugging Face model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyHfSpec {
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    /// Written as `head_dim` when set; otherwise `hidden_size / num_heads` is implied.
    pub head_dim: Option<usize>,
    pub max_position_embeddings: usize,
    pub rope_theta: f64,
    pub rms_norm_eps: f64,
    pub tie_word_embeddings: bool,
    /// Mistral's attention window (written for Mistral only).
    pub sliding_window: Option<usize>,
    /// Written verbatim as `rope_scaling`.
    pub rope_scaling: Option<Value>,
    /// Storage type of every tensor: F32, F16 or BF16.
    pub dtype: DType,
    /// 1: `model.safetensors`; more: shards named by `model.safetensors.index.json`.
    pub num_shards: usize,
    pub bos_token_id: u32,
    pub eos_token_id: u32,
    pub seed: u64,
}

impl Default for TinyHfSpec {
    fn default() -> Self {
        Self {
            family: Family::Llama,
            vocab_size: 128,
            hidden_size: 64,
            intermediate_size: 96,
            num_layers: 2,
            num_heads: 4,
            num_kv_heads: 2,
            head_dim: None,
            max_position_embeddings: 256,
            rope_theta: 10_000.0,
            rms_norm_eps: 1e-5,
            tie_word_embeddings: false,
            sliding_window: None,
            rope_scaling: None,
            dtype: DType::F32,
            num_shards: 1,
            bos_token_id: 1,
            eos_token_id: 2,
            seed: 17,
        }
    }
}

/// FNV-1a: each tensor's values depend only on the seed and its name, so two specs that differ
/// in an option (dtype, tying, sharding) share every weight they both have.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> EngineError {
    EngineError::model_load(format!("cannot write {}: {e}", path.display()))
}

/// How a tensor's values are drawn.
#[derive(Debug, Clone, Copy)]
enum Init {
    /// Uniform with standard deviation `scale / sqrt(fan_in)` (fan_in: the last dimension).
    Matrix(f64),
    /// Uniform in `[low, high)`: norm scales and biases.
    Range(f64, f64),
}

impl TinyHfSpec {
    /// A spec of `family` with the options that family is known for: Mistral gets a sliding
    /// window of 8, Qwen3 an explicit head_dim of 32 (≠ hidden_size / num_heads = 16).
    pub fn for_family(family: Family) -> Self {
        let mut spec = Self {
            family,
            ..Self::default()
        };
        match family {
            Family::Mistral => spec.sliding_window = Some(8),
            Family::Qwen3 => spec.head_dim = Some(32),
            Family::Llama | Family::Qwen2 => {}
        }
        spec
    }

    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_heads.max(1))
    }

    fn torch_dtype(&self) -> &'static str {
        match self.dtype {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            _ => "float32",
        }
    }

    /// The `config.json` this spec writes.
    pub fn config_json(&self) -> Value {
        let mut config = json!({
            "architectures": [self.family.architecture()],
            "model_type": self.family.model_type(),
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "max_position_embeddings": self.max_position_embeddings,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": self.rope_scaling.clone().unwrap_or(Value::Null),
            "tie_word_embeddings": self.tie_word_embeddings,
            "hidden_act": "silu",
            "torch_dtype": self.torch_dtype(),
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
        });
        let fields = config.as_object_mut().expect("a JSON object");
        if let Some(head_dim) = self.head_dim {
            fields.insert("head_dim".into(), json!(head_dim));
        }
        match self.family {
            Family::Mistral => {
                fields.insert("sliding_window".into(), json!(self.sliding_window));
            }
            Family::Qwen2 => {
                fields.insert("use_sliding_window".into(), json!(false));
                fields.insert("sliding_window".into(), json!(self.max_position_embeddings));
            }
            Family::Qwen3 => {
                fields.insert("attention_bias".into(), json!(false));
            }
            Family::Llama => {
                fields.insert("attention_bias".into(), json!(false));
            }
        }
        config
    }

    /// Every tensor's Hugging Face name, shape and initialisation.
    fn layout(&self) -> Vec<(String, Vec<usize>, Init)> {
        let (h, i, v) = (self.hidden_size, self.intermediate_size, self.vocab_size);
        let d = self.head_dim();
        let (q, kv) = (self.num_heads * d, self.num_kv_heads * d);
        let norm = Init::Range(0.6, 1.4);
        let mut layout = vec![(
            "model.embed_tokens.weight".into(),
            vec![v, h],
            Init::Range(-1.0, 1.0),
        )];
        for layer in 0..self.num_layers {
            let p = format!("model.layers.{layer}");
            let mut add = |name: &str, shape: Vec<usize>, init: Init| {
                layout.push((format!("{p}.{name}"), shape, init));
            };
            add("input_layernorm.weight", vec![h], norm);
            add("self_attn.q_proj.weight", vec![q, h], Init::Matrix(1.0));
            add("self_attn.k_proj.weight", vec![kv, h], Init::Matrix(1.0));
            add("self_attn.v_proj.weight", vec![kv, h], Init::Matrix(1.0));
            add("self_attn.o_proj.weight", vec![h, q], Init::Matrix(1.0));
            if self.family == Family::Qwen2 {
                add("self_attn.q_proj.bias", vec![q], Init::Range(-0.3, 0.3));
                add("self_attn.k_proj.bias", vec![kv], Init::Range(-0.3, 0.3));
                add("self_attn.v_proj.bias", vec![kv], Init::Range(-0.3, 0.3));
            }
            if self.family == Family::Qwen3 {
                add("self_attn.q_norm.weight", vec![d], norm);
                add("self_attn.k_norm.weight", vec![d], norm);
            }
            add("post_attention_layernorm.weight", vec![h], norm);
            add("mlp.gate_proj.weight", vec![i, h], Init::Matrix(1.0));
            add("mlp.up_proj.weight", vec![i, h], Init::Matrix(1.0));
            add("mlp.down_proj.weight", vec![h, i], Init::Matrix(1.0));
        }
        layout.push(("model.norm.weight".into(), vec![h], norm));
        if !self.tie_word_embeddings {
            layout.push(("lm_head.weight".into(), vec![v, h], Init::Matrix(2.0)));
        }
        layout
    }

    fn random_tensor(&self, name: &str, shape: &[usize], init: Init) -> Result<Tensor> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ name_hash(name));
        let (low, high) = match init {
            Init::Matrix(scale) => {
                let fan_in = shape.last().copied().unwrap_or(1).max(1) as f64;
                let bound = scale * (3.0 / fan_in).sqrt();
                (-bound, bound)
            }
            Init::Range(low, high) => (low, high),
        };
        let len = shape.iter().product();
        let values: Vec<f32> = (0..len)
            .map(|_| rng.random_range(low..high) as f32)
            .collect();
        Ok(Tensor::from_vec(values, shape, &Device::Cpu)?)
    }

    /// Every tensor as written to disk, in the spec's dtype.
    pub fn tensors(&self) -> Result<HashMap<String, Tensor>> {
        self.layout()
            .into_iter()
            .map(|(name, shape, init)| {
                let tensor = self
                    .random_tensor(&name, &shape, init)?
                    .to_dtype(self.dtype)?;
                Ok((name, tensor))
            })
            .collect()
    }

    /// Every tensor as f32 copies of the stored (possibly f16/bf16-rounded) values, so a
    /// reference implementation computes with exactly what the loader reads.
    pub fn weights(&self) -> Result<HashMap<String, Tensor>> {
        self.tensors()?
            .into_iter()
            .map(|(name, t)| Ok((name, t.to_dtype(DType::F32)?)))
            .collect()
    }

    /// Writes `config.json`, `generation_config.json` and the safetensors into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        write_hf_dir(dir, &self.config_json(), &self.tensors()?, self.num_shards)?;
        let generation = json!({
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
        });
        write_json(&dir.join("generation_config.json"), &generation)
    }
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| io_error(path, e))?;
    std::fs::write(path, text).map_err(|e| io_error(path, e))
}

/// Writes any config and tensors as a Hugging Face directory (tests use it for broken ones too):
/// `model.safetensors` when `num_shards` is 1, else `model-0000i-of-0000n.safetensors` files
/// (tensors split by sorted name) and `model.safetensors.index.json`.
pub fn write_hf_dir(
    dir: &Path,
    config: &Value,
    tensors: &HashMap<String, Tensor>,
    num_shards: usize,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    write_json(&dir.join("config.json"), config)?;
    if num_shards <= 1 {
        candle_core::safetensors::save(tensors, dir.join("model.safetensors"))?;
        return Ok(());
    }
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    let mut weight_map = serde_json::Map::new();
    let mut total_size_bytes = 0;
    for index in 0..num_shards {
        let file = format!("model-{:05}-of-{num_shards:05}.safetensors", index + 1);
        // An even split: shard `index` holds the names from index·n/shards on.
        let range = index * names.len() / num_shards..(index + 1) * names.len() / num_shards;
        let shard: HashMap<&str, Tensor> = names[range]
            .iter()
            .map(|name| (name.as_str(), tensors[*name].clone()))
            .collect();
        for (name, tensor) in &shard {
            weight_map.insert(name.to_string(), json!(file));
            total_size_bytes += tensor.elem_count() * tensor.dtype().size_in_bytes();
        }
        candle_core::safetensors::save(&shard, dir.join(&file))?;
    }
    let index = json!({
        "metadata": {"total_size": total_size_bytes},
        "weight_map": weight_map,
    });
    write_json(&dir.join("model.safetensors.index.json"), &index)
}
