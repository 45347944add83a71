//! The kernels' module, loaded once per KV cache from the fatbin build.rs wrote, and the handles
//! of the functions that cache launches: no module or function lookup on a step's hot path.

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaModule, CudaStream};
use candle_core::cuda_backend::cudarc::nvrtc::Ptx;
use candle_core::{CudaDevice, Result};

use crate::plan::{attention_kernel_suffix, SUPPORTED_HEAD_DIMS};

/// The kernels as a fatbin: SASS for sm_80 and sm_90 (and `CUDA_COMPUTE_CAP` when it is
/// another) plus PTX for newer GPUs, so a known GPU starts without a JIT compilation.
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/paged_attention.fatbin"));

/// Element types the kernels are instantiated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelDType {
    F32,
    F16,
    Bf16,
}

impl KernelDType {
    fn suffix(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
        }
    }
}

pub(crate) fn check_head_dim(head_dim: usize) -> Result<()> {
    if SUPPORTED_HEAD_DIMS.contains(&head_dim) {
        return Ok(());
    }
    candle_core::bail!("head_dim {head_dim} is not supported by the CUDA attention kernels (supported: {SUPPORTED_HEAD_DIMS:?})")
}

/// Loads a fatbin's module in `device`'s context; returns it with candle's stream, which every
/// launch of ours shares.
pub(crate) fn load_fatbin(
    device: &CudaDevice,
    fatbin: &[u8],
) -> Result<(Arc<CudaStream>, Arc<CudaModule>)> {
    let stream = device.cuda_stream();
    let module = stream
        .context()
        .load_module(Ptx::from_binary(fatbin.to_vec()))
        .map_err(candle_core::Error::wrap)?;
    Ok((stream, module))
}

/// The handle of kernel `name` of `module`.
pub(crate) fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
    module
        .load_function(name)
        .map_err(|e| candle_core::Error::msg(format!("kernel {name}: {e}")))
}

/// The functions one cache (one element type, one head size, one block size) launches, on
/// candle's stream.
#[derive(Debug, Clone)]
pub struct CacheKernels {
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) dtype: KernelDType,
    pub(crate) cache_write: CudaFunction,
    pub(crate) attention: CudaFunction,
    pub(crate) reduce: CudaFunction,
}

impl CacheKernels {
    /// Loads the module and looks the three functions up, once: the attention kernel compiled
    /// for `block_size` where there is one ([`crate::plan::COMPILED_BLOCK_SIZES`]).
    pub fn load(
        device: &CudaDevice,
        dtype: KernelDType,
        head_dim: usize,
        block_size: usize,
    ) -> Result<Self> {
        check_head_dim(head_dim)?;
        let (stream, module) = load_fatbin(device, FATBIN)?;
        let suffix = dtype.suffix();
        let attention = attention_kernel_suffix(head_dim, block_size);
        Ok(Self {
            cache_write: function(&module, &format!("cache_write_{suffix}"))?,
            attention: function(&module, &format!("paged_attention_{suffix}_{attention}"))?,
            reduce: function(
                &module,
                &format!("paged_attention_reduce_{suffix}_d{head_dim}"),
            )?,
            stream,
            dtype,
        })
    }

    pub fn dtype(&self) -> KernelDType {
        self.dtype
    }
}
