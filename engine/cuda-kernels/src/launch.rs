//! Launchers of `kernels/paged_attention.cu` on candle's CUDA device and stream.

use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, CudaView, DeviceRepr, LaunchConfig, PushKernelArg,
};
use candle_core::Result;

use crate::module::{check_head_dim, CacheKernels};
use crate::plan::WorkPlan;
use crate::scratch::SplitScratch;

/// `AttnParams` of the kernel (same field order, `repr(C)`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct AttnParams {
    num_heads: i32,
    num_kv_heads: i32,
    block_size: i32,
    max_blocks_per_seq: i32,
    q_row_stride: i32,
    out_row_stride: i32,
    scale: f32,
    window: i32,
    partition_size: i32,
    max_partitions: i32,
    softcap: f32,
}

// SAFETY: a plain `repr(C)` struct of 4-byte scalars, passed by value as the kernel declares it.
#[allow(unsafe_code)]
unsafe impl DeviceRepr for AttnParams {}

/// Geometry of a paged cache: `[num_blocks, num_kv_heads, block_size, head_dim]` per layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheGeometry {
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub block_size: usize,
}

/// What every launch of one cache needs: its kernels (on candle's stream) and its geometry.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub kernels: &'a CacheKernels,
    pub geometry: CacheGeometry,
}

/// Rows of a 2-D tensor on the device: `row_stride` elements apart.
#[derive(Debug)]
pub struct Rows<'a, T> {
    pub view: CudaView<'a, T>,
    pub row_stride: usize,
}

/// One step's tables on the device, shared by every layer.
#[derive(Debug)]
pub struct DeviceStep {
    pub plan: WorkPlan,
    pub work: CudaSlice<i32>,
    pub slot_mapping: CudaSlice<i32>,
    pub block_tables: CudaSlice<i32>,
    pub max_blocks_per_seq: usize,
    pub seq_lens: CudaSlice<i32>,
    pub num_tokens: usize,
}

/// How one layer attends (the engine's `LayerAttention`): the scale of `q · k`, the sliding
/// window (0 = none) and the logit softcap (0 = none). The step's work plan is built without a
/// window, so it covers every layer: a windowed layer's items simply have fewer partitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerSettings {
    pub scale: f32,
    pub window: usize,
    pub softcap: f32,
}

impl LayerSettings {
    /// Scale 1/√head_dim, no window, no softcap.
    pub fn standard(head_dim: usize) -> Self {
        Self {
            scale: 1.0 / (head_dim as f32).sqrt(),
            window: 0,
            softcap: 0.0,
        }
    }
}

fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| candle_core::Error::msg(format!("{what} {value} exceeds i32")))
}

/// Writes each token's key and value rows into its cache slot.
pub fn cache_write<T: DeviceRepr>(
    launch: &Launch<'_>,
    key: &Rows<'_, T>,
    value: &Rows<'_, T>,
    key_cache: &mut CudaSlice<T>,
    value_cache: &mut CudaSlice<T>,
    step: &DeviceStep,
) -> Result<()> {
    if step.num_tokens == 0 {
        return Ok(());
    }
    let geometry = launch.geometry;
    let row = geometry.num_kv_heads * geometry.head_dim;
    let config = LaunchConfig {
        grid_dim: (to_i32(step.num_tokens, "num_tokens")? as u32, 1, 1),
        block_dim: (row.next_multiple_of(32).min(1024) as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    let (num_kv_heads, head_dim, block_size) = (
        to_i32(geometry.num_kv_heads, "num_kv_heads")?,
        to_i32(geometry.head_dim, "head_dim")?,
        to_i32(geometry.block_size, "block_size")?,
    );
    let (key_row_stride, value_row_stride) = (
        to_i32(key.row_stride, "key row stride")?,
        to_i32(value.row_stride, "value row stride")?,
    );
    let kernels = launch.kernels;
    let mut builder = kernels.stream.launch_builder(&kernels.cache_write);
    builder
        .arg(&key.view)
        .arg(&value.view)
        .arg(key_cache)
        .arg(value_cache)
        .arg(&step.slot_mapping)
        .arg(&num_kv_heads)
        .arg(&head_dim)
        .arg(&block_size)
        .arg(&key_row_stride)
        .arg(&value_row_stride);
    // SAFETY: the argument list matches `cache_write_*` in paged_attention.cu; `key`/`value`
    // hold `num_tokens` rows of `row_stride` elements, the caches hold every slot of
    // `slot_mapping` (the block manager hands out only blocks below `num_blocks`).
    #[allow(unsafe_code)]
    unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
    Ok(())
}

/// Attention of every query row of `q` over its sequence's cached context, as `layer` says;
/// writes `out` (`[num_tokens, num_heads * head_dim]`, contiguous).
pub fn paged_attention<T: DeviceRepr>(
    launch: &Launch<'_>,
    layer: LayerSettings,
    q: &Rows<'_, T>,
    (key_cache, value_cache): (&CudaSlice<T>, &CudaSlice<T>),
    step: &DeviceStep,
    scratch: &mut SplitScratch,
    out: &mut CudaSlice<T>,
) -> Result<()> {
    let (kernels, geometry) = (launch.kernels, launch.geometry);
    check_head_dim(geometry.head_dim)?;
    if step.plan.num_items == 0 {
        return Ok(());
    }
    let plan = &step.plan;
    let params = AttnParams {
        num_heads: to_i32(geometry.num_heads, "num_heads")?,
        num_kv_heads: to_i32(geometry.num_kv_heads, "num_kv_heads")?,
        block_size: to_i32(geometry.block_size, "block_size")?,
        max_blocks_per_seq: to_i32(step.max_blocks_per_seq, "blocks per sequence")?,
        q_row_stride: to_i32(q.row_stride, "q row stride")?,
        out_row_stride: to_i32(geometry.num_heads * geometry.head_dim, "out row stride")?,
        scale: layer.scale,
        window: to_i32(layer.window, "sliding window")?,
        partition_size: to_i32(plan.partition_size, "partition size")?,
        max_partitions: to_i32(plan.max_partitions, "partitions")?,
        softcap: layer.softcap,
    };
    let grid = (
        to_i32(plan.num_items, "work items")? as u32,
        geometry.num_kv_heads as u32,
        plan.max_partitions as u32,
    );
    // Without a split the kernel writes `out` and never touches the partial buffers.
    let (partial_acc, partial_ml) = scratch.buffers(
        &kernels.stream,
        plan.partial_acc_len(geometry.num_kv_heads, geometry.head_dim),
        plan.partial_ml_len(geometry.num_kv_heads),
    )?;
    {
        let mut builder = kernels.stream.launch_builder(&kernels.attention);
        builder
            .arg(&q.view)
            .arg(key_cache)
            .arg(value_cache)
            .arg(&step.block_tables)
            .arg(&step.seq_lens)
            .arg(&step.work)
            .arg(&mut *out)
            .arg(&mut *partial_acc)
            .arg(&mut *partial_ml)
            .arg(&params);
        let config = LaunchConfig {
            grid_dim: grid,
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches `paged_attention_*` in paged_attention.cu; the work
        // items, block tables and sequence lengths come from the same step as `q`, the partial
        // buffers have the sizes `WorkPlan` computes for this grid.
        #[allow(unsafe_code)]
        unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
    }
    if plan.max_partitions == 1 {
        return Ok(());
    }
    let mut builder = kernels.stream.launch_builder(&kernels.reduce);
    builder
        .arg(&step.seq_lens)
        .arg(&step.work)
        .arg(&*partial_acc)
        .arg(&*partial_ml)
        .arg(out)
        .arg(&params);
    let config = LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: as above; the reduction reads only the partitions the first kernel wrote.
    #[allow(unsafe_code)]
    unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
    Ok(())
}
