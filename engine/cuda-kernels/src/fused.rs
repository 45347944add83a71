//! Launchers of `kernels/fused.cu` (SwiGLU activation, rotary embedding of queries and keys),
//! with the function handles looked up once per device.

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, DeviceRepr, LaunchConfig, PushKernelArg,
};
use candle_core::{CudaDevice, Result};

use crate::launch::Rows;
use crate::module::{function, load_fatbin, KernelDType};

/// `kernels/fused.cu` as a fatbin (the architectures of build.rs).
pub const FUSED_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fused.fatbin"));

const THREADS: u32 = 256;
/// Threads of a row's norm: enough that each loads few elements (a row of 2048 took 8 µs with
/// 256 threads on an H200, twice candle's rms_norm).
const NORM_THREADS: u32 = 1024;
/// Grid-stride loops need no more blocks than this to fill any GPU.
const MAX_BLOCKS: usize = 8192;

/// The fused kernels of one device, one function per element type (f32, f16, bf16).
#[derive(Debug, Clone)]
pub struct FusedKernels {
    stream: Arc<CudaStream>,
    silu_mul: [CudaFunction; 3],
    add_rms_norm: [CudaFunction; 3],
    rope_qk: [CudaFunction; 3],
}

/// The heads `rope_qk` rotates per token, and how pairs are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RopeHeads {
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    /// Pairs (2i, 2i+1) instead of (i, i + head_dim / 2).
    pub interleaved: bool,
}

fn index(dtype: KernelDType) -> usize {
    match dtype {
        KernelDType::F32 => 0,
        KernelDType::F16 => 1,
        KernelDType::Bf16 => 2,
    }
}

fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| candle_core::Error::msg(format!("{what} {value} exceeds i32")))
}

impl FusedKernels {
    /// Loads the module on `device`'s stream and looks every function up, once.
    pub fn load(device: &CudaDevice) -> Result<Self> {
        let (stream, module) = load_fatbin(device, FUSED_FATBIN)?;
        let per_dtype = |name: &str| -> Result<[CudaFunction; 3]> {
            let load = |suffix: &str| function(&module, &format!("{name}_{suffix}"));
            Ok([load("f32")?, load("f16")?, load("bf16")?])
        };
        Ok(Self {
            silu_mul: per_dtype("silu_mul")?,
            add_rms_norm: per_dtype("add_rms_norm")?,
            rope_qk: per_dtype("rope_qk")?,
            stream,
        })
    }

    /// `out[r][j] = silu(gate_up[r][j]) · gate_up[r][width + j]` for `num_rows` contiguous rows
    /// of `2 · width` elements; `out` holds `num_rows · width`.
    pub fn silu_mul<T: DeviceRepr>(
        &self,
        dtype: KernelDType,
        gate_up: &CudaView<'_, T>,
        out: &mut CudaSlice<T>,
        num_rows: usize,
        width: usize,
    ) -> Result<()> {
        let total = num_rows * width;
        if total == 0 {
            return Ok(());
        }
        if gate_up.len() < 2 * total || out.len() < total {
            candle_core::bail!("silu_mul: buffers too small for {num_rows} rows of {width}");
        }
        let (num_rows_arg, width_arg) = (to_i32(num_rows, "rows")?, to_i32(width, "width")?);
        let blocks = total.div_ceil(THREADS as usize).min(MAX_BLOCKS) as u32;
        let mut builder = self.stream.launch_builder(&self.silu_mul[index(dtype)]);
        builder
            .arg(gate_up)
            .arg(out)
            .arg(&num_rows_arg)
            .arg(&width_arg);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches `silu_mul_*` in fused.cu; the lengths were checked.
        #[allow(unsafe_code)]
        unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
        Ok(())
    }

    /// `sum = x + residual` and `normed = rms_norm(sum) · weight` for `num_rows` contiguous rows of
    /// `weight.len()` elements, in one pass.
    pub fn add_rms_norm<T: DeviceRepr>(
        &self,
        dtype: KernelDType,
        (x, residual): (&CudaView<'_, T>, &CudaView<'_, T>),
        weight: &CudaView<'_, T>,
        (sum, normed): (&mut CudaSlice<T>, &mut CudaSlice<T>),
        num_rows: usize,
        eps: f32,
    ) -> Result<()> {
        let width = weight.len();
        let total = num_rows * width;
        if total == 0 {
            return Ok(());
        }
        if x.len() < total || residual.len() < total || sum.len() < total || normed.len() < total {
            candle_core::bail!("add_rms_norm: buffers too small for {num_rows} rows of {width}");
        }
        let width_arg = to_i32(width, "width")?;
        let threads = width.next_multiple_of(32).min(NORM_THREADS as usize) as u32;
        let mut builder = self.stream.launch_builder(&self.add_rms_norm[index(dtype)]);
        builder
            .arg(x)
            .arg(residual)
            .arg(weight)
            .arg(sum)
            .arg(normed)
            .arg(&width_arg)
            .arg(&eps);
        let config = LaunchConfig {
            grid_dim: (to_i32(num_rows, "rows")? as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches `add_rms_norm_*` in fused.cu; the lengths were
        // checked.
        #[allow(unsafe_code)]
        unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
        Ok(())
    }

    /// Rotates every token's query and key heads (`q`, `k`: `num_tokens` strided rows) with
    /// its cos/sin row (`head_dim / 2` each) into contiguous `q_out` and `k_out`.
    pub fn rope_qk<T: DeviceRepr>(
        &self,
        dtype: KernelDType,
        num_tokens: usize,
        (q, k): (&Rows<'_, T>, &Rows<'_, T>),
        (cos, sin): (&CudaView<'_, T>, &CudaView<'_, T>),
        (q_out, k_out): (&mut CudaSlice<T>, &mut CudaSlice<T>),
        heads: RopeHeads,
    ) -> Result<()> {
        if num_tokens == 0 {
            return Ok(());
        }
        let half = heads.head_dim / 2;
        let (q_width, k_width) = (
            heads.num_heads * heads.head_dim,
            heads.num_kv_heads * heads.head_dim,
        );
        let rows_fit = |rows: &Rows<'_, T>, width: usize| {
            rows.view.len() >= (num_tokens - 1) * rows.row_stride + width
        };
        if !rows_fit(q, q_width)
            || !rows_fit(k, k_width)
            || cos.len() < num_tokens * half
            || sin.len() < num_tokens * half
            || q_out.len() < num_tokens * q_width
            || k_out.len() < num_tokens * k_width
        {
            candle_core::bail!("rope_qk: buffers too small for {num_tokens} tokens of {heads:?}");
        }
        let args = [
            to_i32(q.row_stride, "q row stride")?,
            to_i32(k.row_stride, "k row stride")?,
            to_i32(heads.num_heads, "heads")?,
            to_i32(heads.num_kv_heads, "kv heads")?,
            to_i32(heads.head_dim, "head_dim")?,
            i32::from(heads.interleaved),
        ];
        let pairs = (heads.num_heads + heads.num_kv_heads) * half;
        let threads = pairs.next_multiple_of(32).min(THREADS as usize) as u32;
        let mut builder = self.stream.launch_builder(&self.rope_qk[index(dtype)]);
        builder
            .arg(&q.view)
            .arg(&args[0])
            .arg(&k.view)
            .arg(&args[1])
            .arg(cos)
            .arg(sin)
            .arg(q_out)
            .arg(k_out)
            .arg(&args[2])
            .arg(&args[3])
            .arg(&args[4])
            .arg(&args[5]);
        let config = LaunchConfig {
            grid_dim: (to_i32(num_tokens, "tokens")? as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches `rope_qk_*` in fused.cu; the lengths were checked.
        #[allow(unsafe_code)]
        unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
        Ok(())
    }
}
