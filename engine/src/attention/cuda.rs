//! The GPU paged KV cache: one key and one value buffer per layer,
//! `[num_blocks, num_kv_heads, block_size, head_dim]` in the compute dtype, written and attended
//! through by `pagoda-cuda-kernels`. A step's tables (slots, block tables, work items) go to the
//! GPU once in `begin_step` and serve every layer.

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use candle_core::cuda_backend::CudaDType;
use candle_core::{CudaDevice, DType, Device, Tensor};
use half::{bf16, f16};
use pagoda_cuda_kernels::{
    block_table_matrix, cache_write, paged_attention, CacheGeometry, CacheKernels, DeviceStep,
    HeadCounts, KernelDType, LayerSettings, Launch, SeqQuery, SplitScratch, WorkPlan,
};

use super::layer::LayerAttention;
use super::metadata::AttnMetadata;
use super::paged_cache::PagedKvCache;
use super::shape::AttnShape;
use crate::error::{EngineError, Result};
use crate::gpu::rows::{cuda_storage, rows_of, tensor_from_slice};

/// Key and value buffers of every layer, in one element type.
#[derive(Debug)]
enum Buffers {
    F32(Vec<[CudaSlice<f32>; 2]>),
    F16(Vec<[CudaSlice<f16>; 2]>),
    Bf16(Vec<[CudaSlice<bf16>; 2]>),
}

#[derive(Debug)]
pub struct CudaKvCache {
    device: CudaDevice,
    dtype: DType,
    shape: AttnShape,
    block_size: usize,
    num_blocks: usize,
    buffers: Buffers,
    /// The kernels' handles, looked up once.
    kernels: CacheKernels,
    /// Split-K partials, reused by every layer and step.
    scratch: SplitScratch,
    num_sms: usize,
    step: Option<DeviceStep>,
}

fn execution(error: impl std::fmt::Display) -> EngineError {
    EngineError::Execution(format!("CUDA attention: {error}"))
}

fn zeroed_layers<T: DeviceRepr + ValidAsZeroBits>(
    device: &CudaDevice,
    num_layers: usize,
    len: usize,
) -> Result<Vec<[CudaSlice<T>; 2]>> {
    (0..num_layers)
        .map(|_| Ok([device.alloc_zeros::<T>(len)?, device.alloc_zeros::<T>(len)?]))
        .collect()
}

impl CudaKvCache {
    /// Allocates `num_blocks` blocks for every layer on `device` in `dtype` (f32, f16 or bf16).
    pub fn new(
        device: &Device,
        dtype: DType,
        num_layers: usize,
        shape: AttnShape,
        block_size: usize,
        num_blocks: usize,
    ) -> Result<Self> {
        let device = device.as_cuda_device()?.clone();
        let len = num_blocks * block_size * shape.num_kv_heads * shape.head_dim;
        let (buffers, kernel_dtype) = match dtype {
            DType::F32 => (
                Buffers::F32(zeroed_layers(&device, num_layers, len)?),
                KernelDType::F32,
            ),
            DType::F16 => (
                Buffers::F16(zeroed_layers(&device, num_layers, len)?),
                KernelDType::F16,
            ),
            DType::BF16 => (
                Buffers::Bf16(zeroed_layers(&device, num_layers, len)?),
                KernelDType::Bf16,
            ),
            other => {
                return Err(EngineError::Config(format!(
                    "the CUDA KV cache holds f32, f16 or bf16, not {other:?}"
                )))
            }
        };
        let num_sms = device
            .cuda_stream()
            .context()
            .attribute(
                candle_core::cuda_backend::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(execution)?
            .max(1) as usize;
        let kernels = CacheKernels::load(&device, kernel_dtype, shape.head_dim, block_size)?;
        Ok(Self {
            device,
            dtype,
            shape,
            block_size,
            num_blocks,
            buffers,
            kernels,
            scratch: SplitScratch::default(),
            num_sms,
            step: None,
        })
    }

    fn geometry(&self) -> CacheGeometry {
        CacheGeometry {
            num_heads: self.shape.num_heads,
            num_kv_heads: self.shape.num_kv_heads,
            head_dim: self.shape.head_dim,
            block_size: self.block_size,
        }
    }

    /// One layer's keys and values as f32, in the cache layout (tests read slots back).
    #[cfg(feature = "testing")]
    pub fn read_layer(&self, layer: usize) -> Result<(Vec<f32>, Vec<f32>)> {
        fn read<T: DeviceRepr + Copy>(
            device: &CudaDevice,
            pair: &[CudaSlice<T>; 2],
            convert: fn(T) -> f32,
        ) -> Result<(Vec<f32>, Vec<f32>)> {
            let keys = device.clone_dtoh(&pair[0])?;
            let values = device.clone_dtoh(&pair[1])?;
            Ok((
                keys.into_iter().map(convert).collect(),
                values.into_iter().map(convert).collect(),
            ))
        }
        let missing = || execution(format!("no layer {layer}"));
        match &self.buffers {
            Buffers::F32(layers) => {
                read(&self.device, layers.get(layer).ok_or_else(missing)?, |x| x)
            }
            Buffers::F16(layers) => read(
                &self.device,
                layers.get(layer).ok_or_else(missing)?,
                f16::to_f32,
            ),
            Buffers::Bf16(layers) => read(
                &self.device,
                layers.get(layer).ok_or_else(missing)?,
                bf16::to_f32,
            ),
        }
    }

    /// Index of `(slot, kv_head, 0)` in a layer buffer.
    #[cfg(feature = "testing")]
    pub fn slot_offset(&self, slot: usize, kv_head: usize) -> usize {
        let (block, offset) = (slot / self.block_size, slot % self.block_size);
        ((block * self.shape.num_kv_heads + kv_head) * self.block_size + offset)
            * self.shape.head_dim
    }

    fn upload(&self, values: &[i32]) -> Result<CudaSlice<i32>> {
        // An empty upload still needs a valid pointer.
        let values = if values.is_empty() { &[0][..] } else { values };
        Ok(self.device.clone_htod(values)?)
    }
}

impl CudaKvCache {
    fn attend_typed<T: CudaDType + DeviceRepr + ValidAsZeroBits>(
        &mut self,
        layer_buffers: &mut [CudaSlice<T>; 2],
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        (num_tokens, settings): (usize, LayerSettings),
    ) -> Result<Tensor> {
        let step = self
            .step
            .as_ref()
            .ok_or_else(|| execution("attend before begin_step"))?;
        let launch = Launch {
            kernels: &self.kernels,
            geometry: self.geometry(),
        };
        let (q_storage, q_layout) = q.storage_and_layout();
        let (k_storage, k_layout) = k.storage_and_layout();
        let (v_storage, v_layout) = v.storage_and_layout();
        let key = rows_of::<T>(cuda_storage(&k_storage)?, k_layout)?;
        let value = rows_of::<T>(cuda_storage(&v_storage)?, v_layout)?;
        let [key_cache, value_cache] = layer_buffers;
        cache_write(&launch, &key, &value, key_cache, value_cache, step)?;
        let queries = rows_of::<T>(cuda_storage(&q_storage)?, q_layout)?;
        let q_row = launch.geometry.num_heads * launch.geometry.head_dim;
        // SAFETY: the attention kernel (or, after a split, its reduction) writes every element of
        // every token's row: each token belongs to one work item, whose heads it covers.
        #[allow(unsafe_code)]
        let mut out = unsafe { self.device.alloc::<T>(num_tokens * q_row) }?;
        paged_attention(
            &launch,
            settings,
            &queries,
            (key_cache, value_cache),
            step,
            &mut self.scratch,
            &mut out,
        )?;
        Ok(tensor_from_slice(out, &self.device, (num_tokens, q_row)))
    }
}

impl PagedKvCache for CudaKvCache {
    fn begin_step(&mut self, meta: &AttnMetadata) -> Result<()> {
        let seqs: Vec<SeqQuery> = (0..meta.num_seqs())
            .map(|i| {
                let first_token = meta.query_start_loc[i] as usize;
                let num_tokens = meta.query_start_loc[i + 1] as usize - first_token;
                SeqQuery {
                    first_token,
                    num_tokens,
                    first_position: meta.seq_lens[i] as usize - num_tokens,
                }
            })
            .collect();
        let heads = HeadCounts {
            num_heads: self.shape.num_heads,
            num_kv_heads: self.shape.num_kv_heads,
        };
        // Without a window, the plan covers every layer's (windowed or not) key ranges.
        let plan = WorkPlan::build(&seqs, heads, None, self.num_sms);
        let num_slots = self.num_blocks * self.block_size;
        if let Some(&slot) = meta.slot_mapping.iter().find(|&&s| s as usize >= num_slots) {
            return Err(execution(format!("slot {slot} out of range {num_slots}")));
        }
        let slot_mapping: Vec<i32> = meta.slot_mapping.iter().map(|&s| s as i32).collect();
        let (tables, max_blocks_per_seq) = block_table_matrix(&meta.block_tables);
        let seq_lens: Vec<i32> = meta.seq_lens.iter().map(|&l| l as i32).collect();
        self.step = Some(DeviceStep {
            work: self.upload(&plan.work)?,
            slot_mapping: self.upload(&slot_mapping)?,
            block_tables: self.upload(&tables)?,
            max_blocks_per_seq,
            seq_lens: self.upload(&seq_lens)?,
            num_tokens: meta.num_tokens(),
            plan,
        });
        Ok(())
    }

    fn attend(
        &mut self,
        layer: usize,
        (q, k, v): (&Tensor, &Tensor, &Tensor),
        meta: &AttnMetadata,
        attention: &LayerAttention,
    ) -> Result<Tensor> {
        if attention.sinks.is_some() {
            return Err(execution(
                "attention sinks are not implemented in the CUDA attention kernel".to_string(),
            ));
        }
        let num_tokens = meta.num_tokens();
        let settings = LayerSettings {
            scale: attention.scale,
            window: attention.window.unwrap_or(0),
            softcap: attention.softcap.unwrap_or(0.0),
        };
        for (name, tensor) in [("q", q), ("k", k), ("v", v)] {
            if tensor.dtype() != self.dtype || tensor.dim(0)? != num_tokens {
                return Err(execution(format!(
                    "{name} is {:?} {:?}; expected {num_tokens} rows of {:?}",
                    tensor.dtype(),
                    tensor.dims(),
                    self.dtype
                )));
            }
        }
        let missing = || execution(format!("no layer {layer}"));
        // The buffers are taken out for the call so that `self` stays readable inside it.
        let mut buffers = std::mem::replace(&mut self.buffers, Buffers::F32(Vec::new()));
        let result = match &mut buffers {
            Buffers::F32(layers) => layers
                .get_mut(layer)
                .ok_or_else(missing)
                .and_then(|pair| self.attend_typed(pair, q, k, v, (num_tokens, settings))),
            Buffers::F16(layers) => layers
                .get_mut(layer)
                .ok_or_else(missing)
                .and_then(|pair| self.attend_typed(pair, q, k, v, (num_tokens, settings))),
            Buffers::Bf16(layers) => layers
                .get_mut(layer)
                .ok_or_else(missing)
                .and_then(|pair| self.attend_typed(pair, q, k, v, (num_tokens, settings))),
        };
        self.buffers = buffers;
        result
    }

    #[cfg(feature = "testing")]
    fn num_blocks(&self) -> usize {
        self.num_blocks
    }
}
