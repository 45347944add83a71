//! The CPU paged KV cache: the CPU implementation, against which the CUDA kernels are tested
//! (`tests/gpu/kernels.rs`).
//!
//! Layout per layer: `[num_blocks, block_size, num_kv_heads, head_dim]`, in f32, f16 or bf16
//! (`--kv-cache-dtype`). Writes round this step's f32 keys and values into their slots; the
//! kernel (`cpu_kernel`) reads them in place through the block table, widening to f32, so a
//! sequence's cache is never copied. The buffers are allocated zeroed (calloc): the operating
//! system commits their pages only as blocks are first written.

use candle_core::{DType, Device, Tensor};
use half::{bf16, f16};

use super::cpu_kernel::{paged_attention, CacheView};
use super::kv_element::KvElement;
use super::layer::LayerAttention;
use super::metadata::AttnMetadata;
use super::paged_cache::PagedKvCache;
use super::shape::AttnShape;
use crate::error::{EngineError, Result};

/// Every layer's keys and values, as `T`'s bits.
#[derive(Debug)]
struct Layers<T: KvElement> {
    keys: Vec<Vec<T::Bits>>,
    values: Vec<Vec<T::Bits>>,
}

impl<T: KvElement> Layers<T> {
    fn zeroed(num_layers: usize, len: usize) -> Self {
        Self {
            keys: (0..num_layers)
                .map(|_| vec![T::Bits::default(); len])
                .collect(),
            values: (0..num_layers)
                .map(|_| vec![T::Bits::default(); len])
                .collect(),
        }
    }

    /// Rounds each token's row (`row` elements) of `k` and `v` into its slot.
    fn write(&mut self, layer: usize, kv: [&[f32]; 2], slots: &[u32], row: usize) -> Result<()> {
        let [k, v] = kv;
        let keys = T::view_mut(&mut self.keys[layer]);
        let values = T::view_mut(&mut self.values[layer]);
        let num_slots = keys.len() / row.max(1);
        for (token, &slot) in slots.iter().enumerate() {
            let slot = slot as usize;
            if slot >= num_slots {
                return Err(EngineError::Execution(format!(
                    "slot {slot} out of range {num_slots}"
                )));
            }
            let src = token * row..(token + 1) * row;
            T::store(&k[src.clone()], &mut keys[slot * row..(slot + 1) * row]);
            T::store(&v[src], &mut values[slot * row..(slot + 1) * row]);
        }
        Ok(())
    }

    fn view(&self, layer: usize, shape: AttnShape) -> CacheView<'_, T> {
        CacheView {
            keys: T::view(&self.keys[layer]),
            values: T::view(&self.values[layer]),
            shape,
        }
    }

    /// One layer widened to f32.
    #[cfg(feature = "testing")]
    fn widened(&self, layer: usize) -> (Vec<f32>, Vec<f32>) {
        let widen = |bits: &[T::Bits]| {
            let stored = T::view(bits);
            T::load(stored, &mut vec![0.0; stored.len()]).to_vec()
        };
        (widen(&self.keys[layer]), widen(&self.values[layer]))
    }
}

/// The cache's buffers in the element type chosen at start.
#[derive(Debug)]
enum Storage {
    F32(Layers<f32>),
    F16(Layers<f16>),
    Bf16(Layers<bf16>),
}

#[derive(Debug)]
pub struct CpuKvCache {
    shape: AttnShape,
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    num_blocks: usize,
    storage: Storage,
}

impl CpuKvCache {
    /// An f32 cache (the reference the others are checked against).
    #[cfg(any(test, feature = "testing"))]
    pub fn new(num_layers: usize, shape: AttnShape, block_size: usize, num_blocks: usize) -> Self {
        let len = num_blocks * block_size * shape.num_kv_heads * shape.head_dim;
        Self {
            shape,
            num_blocks,
            storage: Storage::F32(Layers::zeroed(num_layers, len)),
        }
    }

    /// A cache storing `dtype`: f32, f16 or bf16.
    pub fn with_dtype(
        num_layers: usize,
        shape: AttnShape,
        block_size: usize,
        num_blocks: usize,
        dtype: DType,
    ) -> Result<Self> {
        let len = num_blocks * block_size * shape.num_kv_heads * shape.head_dim;
        let storage = match dtype {
            DType::F32 => Storage::F32(Layers::zeroed(num_layers, len)),
            DType::F16 => Storage::F16(Layers::zeroed(num_layers, len)),
            DType::BF16 => Storage::Bf16(Layers::zeroed(num_layers, len)),
            other => {
                return Err(EngineError::Config(format!(
                    "the CPU KV cache stores f32, f16 or bf16, not {other:?}"
                )))
            }
        };
        Ok(Self {
            shape,
            num_blocks,
            storage,
        })
    }

    /// One layer's keys and values widened to f32, `[num_blocks, block_size, num_kv_heads,
    /// head_dim]`.
    #[cfg(feature = "testing")]
    pub fn layer(&self, layer: usize) -> (Vec<f32>, Vec<f32>) {
        match &self.storage {
            Storage::F32(layers) => layers.widened(layer),
            Storage::F16(layers) => layers.widened(layer),
            Storage::Bf16(layers) => layers.widened(layer),
        }
    }
}

/// Writes this step's rows into `layers`, then attends over them.
fn write_and_attend<T: KvElement>(
    layers: &mut Layers<T>,
    layer: usize,
    shape: AttnShape,
    qkv: [&[f32]; 3],
    (meta, settings): (&AttnMetadata, &LayerAttention),
) -> Result<Vec<f32>> {
    let [q, k, v] = qkv;
    let row = shape.num_kv_heads * shape.head_dim;
    layers.write(layer, [k, v], &meta.slot_mapping, row)?;
    Ok(paged_attention(q, &layers.view(layer, shape), meta, settings))
}

impl PagedKvCache for CpuKvCache {
    fn attend(
        &mut self,
        layer: usize,
        (q, k, v): (&Tensor, &Tensor, &Tensor),
        meta: &AttnMetadata,
        settings: &LayerAttention,
    ) -> Result<Tensor> {
        let num_tokens = meta.num_tokens();
        let k = k.flatten_all()?.to_vec1::<f32>()?;
        let v = v.flatten_all()?.to_vec1::<f32>()?;
        let q = q.flatten_all()?.to_vec1::<f32>()?;
        let expected = num_tokens * self.shape.num_heads * self.shape.head_dim;
        if q.len() != expected
            || k.len() != num_tokens * self.shape.num_kv_heads * self.shape.head_dim
            || v.len() != k.len()
        {
            return Err(EngineError::Execution(format!(
                "attention input sizes q={} k={} v={} do not match {num_tokens} tokens",
                q.len(),
                k.len(),
                v.len()
            )));
        }
        let qkv = [q.as_slice(), k.as_slice(), v.as_slice()];
        let out = match &mut self.storage {
            Storage::F32(layers) => write_and_attend(layers, layer, self.shape, qkv, (meta, settings))?,
            Storage::F16(layers) => write_and_attend(layers, layer, self.shape, qkv, (meta, settings))?,
            Storage::Bf16(layers) => write_and_attend(layers, layer, self.shape, qkv, (meta, settings))?,
        };
        Ok(Tensor::from_vec(
            out,
            (num_tokens, expected / num_tokens.max(1)),
            &Device::Cpu,
        )?)
    }

    #[cfg(feature = "testing")]
    fn num_blocks(&self) -> usize {
        self.num_blocks
    }
}
