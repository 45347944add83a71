//! Loads a PEFT adapter directory (`adapter_config.json` + `adapter_model.safetensors`, the key
//! names `save_pretrained` writes) for a Llama-family base, checks every tensor against the base
//! model's shapes, and builds the fused low-rank pairs the layers apply. Errors name the file,
//! field or tensor at fault.

use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};

use super::adapter::{LayerAdapter, LoraAdapter, LoraId, LowRankPair, PartBlock};
use super::config::{AdapterConfig, LoraTarget};
use crate::error::{EngineError, Result};
use crate::models::config::ModelConfig;
use crate::models::qk_rows::permute_qk_rows;

/// One module's raw factors, f32 on the host: `a` is `[rank, in]`, `b` is `[out, rank]`.
struct Factors {
    a: Tensor,
    b: Tensor,
}

/// Where and how an adapter is loaded.
#[derive(Debug, Clone)]
pub struct LoraLoadOptions {
    pub max_rank: usize,
    pub device: Device,
    pub dtype: DType,
}

/// Loads the adapter in `dir` for `model`, named `name`.
pub fn load_lora_adapter(
    name: &str,
    dir: &Path,
    model: &ModelConfig,
    options: &LoraLoadOptions,
) -> Result<LoraAdapter> {
    let fail = |message: String| EngineError::Adapter(format!("{}: {message}", dir.display()));
    if !dir.is_dir() {
        return Err(fail("not a directory".into()));
    }
    let config_text = std::fs::read_to_string(dir.join("adapter_config.json"))
        .map_err(|e| fail(format!("cannot read adapter_config.json: {e}")))?;
    let config = AdapterConfig::parse(&config_text, options.max_rank).map_err(fail)?;
    let weights_path = dir.join("adapter_model.safetensors");
    if !weights_path.is_file() {
        let hint = if dir.join("adapter_model.bin").is_file() {
            " (adapter_model.bin found: convert it to safetensors)"
        } else {
            ""
        };
        return Err(fail(format!("no adapter_model.safetensors{hint}")));
    }
    let tensors = candle_core::safetensors::load(&weights_path, &Device::Cpu)
        .map_err(|e| fail(format!("cannot read adapter_model.safetensors: {e}")))?;
    let modules = group_factors(tensors, model, &config).map_err(fail)?;
    if modules.is_empty() {
        return Err(fail(
            "adapter_model.safetensors holds no LoRA weights".into(),
        ));
    }
    let num_modules = modules.len();
    let layers = build_layers(modules, model, &config, options)
        .map_err(|e| fail(format!("cannot build the adapter: {e}")))?;
    Ok(LoraAdapter {
        id: LoraId::next(),
        name: name.to_string(),
        rank: config.rank,
        num_modules,
        layers,
    })
}

/// A tensor name → (layer, target, is `lora_A`), or why the tensor cannot be served.
fn parse_key(key: &str) -> std::result::Result<(usize, LoraTarget, bool), String> {
    if key.contains("lora_embedding") || key.contains("embed_tokens") {
        return Err(format!(
            "tensor `{key}`: embedding targets are not supported"
        ));
    }
    if key.contains("lm_head") {
        return Err(format!(
            "tensor `{key}`: output-head targets are not supported"
        ));
    }
    if key.contains("lora_magnitude_vector") {
        return Err(format!("tensor `{key}`: DoRA adapters are not supported"));
    }
    let unknown = || format!("tensor `{key}` is not a LoRA weight of a supported projection");
    let rest = key.strip_prefix("base_model.model.").unwrap_or(key);
    let rest = rest.strip_prefix("model.layers.").ok_or_else(unknown)?;
    let parts: Vec<&str> = rest.split('.').collect();
    let (layer, parent, module, factor) = match parts.as_slice() {
        [layer, parent, module, factor, "weight"] => (*layer, *parent, *module, *factor),
        [layer, parent, module, factor, _adapter_name, "weight"] => {
            (*layer, *parent, *module, *factor)
        }
        _ => return Err(unknown()),
    };
    let layer: usize = layer.parse().map_err(|_| unknown())?;
    let target = LoraTarget::from_module_name(module).ok_or_else(unknown)?;
    if target.parent_name() != parent {
        return Err(unknown());
    }
    let is_a = match factor {
        "lora_A" => true,
        "lora_B" => false,
        _ => return Err(unknown()),
    };
    Ok((layer, target, is_a))
}

type ModuleFactors = BTreeMap<(usize, LoraTarget), Factors>;
/// A module's `lora_A` and `lora_B` as they are found, and the first key seen (for errors).
type HalfPair = (Option<Tensor>, Option<Tensor>, String);

/// Pairs every `lora_A` with its `lora_B`, checking layers, ranks and shapes.
fn group_factors(
    tensors: std::collections::HashMap<String, Tensor>,
    model: &ModelConfig,
    config: &AdapterConfig,
) -> std::result::Result<ModuleFactors, String> {
    let mut halves: BTreeMap<(usize, LoraTarget), HalfPair> = BTreeMap::new();
    let mut keys: Vec<_> = tensors.into_iter().collect();
    keys.sort_by(|x, y| x.0.cmp(&y.0));
    for (key, tensor) in keys {
        let (layer, target, is_a) = parse_key(&key)?;
        if layer >= model.num_layers {
            return Err(format!(
                "tensor `{key}`: layer {layer}, but the base model has {} layers",
                model.num_layers
            ));
        }
        if !LoraTarget::of_model(model).contains(&target) {
            return Err(format!(
                "tensor `{key}`: the base model has no `{}` module; its projections are {}",
                target.module_name(),
                LoraTarget::names(LoraTarget::of_model(model))
            ));
        }
        if model.features.moe.is_some() && target.parent_name() == "mlp" {
            return Err(format!(
                "tensor `{key}`: {} adapters on a mixture-of-experts model are not supported (attention projections are)",
                target.module_name()
            ));
        }
        let dims = tensor.dims().to_vec();
        let (out, inp) = target.base_shape(model);
        let expected = if is_a {
            [config.rank, inp]
        } else {
            [out, config.rank]
        };
        if dims != expected {
            return Err(format!(
                "tensor `{key}` has shape {dims:?}, but `r` = {} and the base model's {} is \
                 [{out}, {inp}], so it must be {expected:?}",
                config.rank,
                target.module_name()
            ));
        }
        let tensor = tensor.to_dtype(DType::F32).map_err(|e| e.to_string())?;
        let entry = halves.entry((layer, target)).or_insert((None, None, key));
        if is_a {
            entry.0 = Some(tensor);
        } else {
            entry.1 = Some(tensor);
        }
    }
    halves
        .into_iter()
        .map(|(slot, (a, b, key))| match (a, b) {
            (Some(a), Some(b)) => Ok((slot, Factors { a, b })),
            _ => Err(format!("tensor `{key}` has no matching lora_A/lora_B")),
        })
        .collect()
}

/// The layers' fused pairs, in the base model's layout (GGUF Llama q/k rows permuted).
fn build_layers(
    mut modules: ModuleFactors,
    model: &ModelConfig,
    config: &AdapterConfig,
    options: &LoraLoadOptions,
) -> Result<Vec<LayerAdapter>> {
    let mut layers = Vec::with_capacity(model.num_layers);
    for layer in 0..model.num_layers {
        let mut take = |target: LoraTarget| -> Result<Option<Factors>> {
            let Some(mut factors) = modules.remove(&(layer, target)) else {
                return Ok(None);
            };
            if model.rope_interleaved {
                match target {
                    LoraTarget::Q => factors.b = permute_qk_rows(&factors.b, model.num_heads)?,
                    LoraTarget::K => factors.b = permute_qk_rows(&factors.b, model.num_kv_heads)?,
                    _ => {}
                }
            }
            Ok(Some(factors))
        };
        let (q_dim, _) = LoraTarget::Q.base_shape(model);
        let (kv_dim, _) = LoraTarget::K.base_shape(model);
        let (inter, _) = LoraTarget::Gate.base_shape(model);
        let h = model.hidden_size;
        // A fused checkpoint's adapter has one pair per fused projection, already in the
        // layers' output order (q|k|v, gate|up); the two layouts never mix (`group_factors`).
        let (qkv, gate_up) = if model.features.fused_projections {
            (
                vec![(take(LoraTarget::Qkv)?, q_dim + 2 * kv_dim)],
                vec![(take(LoraTarget::GateUp)?, 2 * inter)],
            )
        } else {
            (
                vec![
                    (take(LoraTarget::Q)?, q_dim),
                    (take(LoraTarget::K)?, kv_dim),
                    (take(LoraTarget::V)?, kv_dim),
                ],
                vec![
                    (take(LoraTarget::Gate)?, inter),
                    (take(LoraTarget::Up)?, inter),
                ],
            )
        };
        let o = vec![(take(LoraTarget::O)?, h)];
        let down = vec![(take(LoraTarget::Down)?, h)];
        layers.push(LayerAdapter {
            qkv: fuse(qkv, config.scale, options)?,
            o: fuse(o, config.scale, options)?,
            gate_up: fuse(gate_up, config.scale, options)?,
            down: fuse(down, config.scale, options)?,
        });
    }
    Ok(layers)
}

/// One pair for projections fused along their outputs: `A`s stacked along the rank, `B`
/// block-diagonal (zero where a part is not adapted), `scale` folded into `B`.
fn fuse(
    parts: Vec<(Option<Factors>, usize)>,
    scale: f64,
    options: &LoraLoadOptions,
) -> Result<Option<LowRankPair>> {
    if parts.iter().all(|(f, _)| f.is_none()) {
        return Ok(None);
    }
    let total_out: usize = parts.iter().map(|(_, out)| out).sum();
    let mut a_parts = Vec::new();
    let mut b_blocks: Vec<(usize, Tensor)> = Vec::new();
    let mut out_offset = 0;
    for (factors, out) in parts {
        if let Some(factors) = factors {
            a_parts.push(factors.a);
            b_blocks.push((out_offset, factors.b));
        }
        out_offset += out;
    }
    let a = Tensor::cat(&a_parts, 0)?;
    let total_rank = a.dim(0)?;
    let mut b_t = vec![0f32; total_rank * total_out];
    let mut rank_offset = 0;
    let mut blocks = Vec::with_capacity(b_blocks.len());
    for (out_offset, b) in b_blocks {
        let (out, rank) = b.dims2()?;
        blocks.push(PartBlock {
            rank_offset,
            rank,
            out_offset,
            out_len: out,
        });
        let values = b.flatten_all()?.to_vec1::<f32>()?;
        for o in 0..out {
            for j in 0..rank {
                b_t[(rank_offset + j) * total_out + out_offset + o] =
                    (values[o * rank + j] as f64 * scale) as f32;
            }
        }
        rank_offset += rank;
    }
    let to_device = |t: Tensor| -> candle_core::Result<Tensor> {
        t.to_dtype(options.dtype)?.to_device(&options.device)
    };
    Ok(Some(LowRankPair {
        a_t: to_device(a.t()?.contiguous()?)?,
        b_t: to_device(Tensor::from_vec(
            b_t,
            (total_rank, total_out),
            &Device::Cpu,
        )?)?,
        parts: blocks,
    }))
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
