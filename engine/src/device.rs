//! `DeviceSpec`: where the engine runs (`--device cpu|cuda|cuda:N`), and opening it.

use candle_core::Device;

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    #[default]
    Cpu,
    /// An NVIDIA GPU by ordinal.
    Cuda(usize),
}

impl DeviceSpec {
    /// `cpu`, `cuda` (= `cuda:0`) or `cuda:N`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "cpu" => Some(Self::Cpu),
            "cuda" => Some(Self::Cuda(0)),
            _ => text
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(Self::Cuda),
        }
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self, Self::Cuda(_))
    }

    /// Opens the device. A GPU gets a stream of its own, which every thread of the engine uses.
    pub fn open(&self) -> Result<Device> {
        match *self {
            Self::Cpu => Ok(Device::Cpu),
            Self::Cuda(ordinal) => open_cuda(ordinal),
        }
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cpu => write!(f, "cpu"),
            Self::Cuda(ordinal) => write!(f, "cuda:{ordinal}"),
        }
    }
}

/// Whether this build has the CUDA backend.
pub const fn cuda_compiled() -> bool {
    cfg!(feature = "cuda")
}

/// Whether a CUDA device `ordinal` can be opened (false without the `cuda` feature).
pub fn cuda_available(ordinal: usize) -> bool {
    cuda_compiled() && open_cuda(ordinal).is_ok()
}

#[cfg(feature = "cuda")]
fn open_cuda(ordinal: usize) -> Result<Device> {
    let device = Device::new_cuda_with_stream(ordinal).map_err(|e| {
        EngineError::Config(format!(
            "cannot open CUDA device {ordinal} ({e}); check the driver (nvidia-smi) and that \
             libcuda.so.1 and the CUDA 13 libraries are on the library path (docs/cuda.md)"
        ))
    })?;
    let cuda = device.as_cuda_device()?;
    // A stream of our own puts cudarc into multi-stream mode, where every allocation creates
    // two CUDA events and every kernel argument records and waits on them. The engine uses
    // this one stream from every thread, so nothing needs them: turned off before the first
    // allocation, no buffer of ours ever has them.
    // SAFETY: every buffer of this device is allocated, used and freed on its one stream
    // (candle's, which our kernels share), so stream order alone keeps uses apart.
    #[allow(unsafe_code)]
    unsafe {
        cuda.disable_event_tracking()
    };
    keep_freed_memory_in_pool(cuda)?;
    Ok(device)
}

/// Memory freed by a step stays in the device's stream-ordered pool for the next step, instead
/// of going back to the driver at each synchronisation (the pool's default release threshold
/// is 0) and being mapped again. What the pool keeps never exceeds a step's peak, which
/// `--gpu-memory-utilization` already leaves room for (profiled at start-up).
#[cfg(feature = "cuda")]
fn keep_freed_memory_in_pool(cuda: &candle_core::CudaDevice) -> Result<()> {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    let stream = cuda.cuda_stream();
    let context = stream.context();
    let mut threshold = u64::MAX;
    // SAFETY: the device handle comes from the context cudarc opened; the attribute takes a
    // u64, which `threshold` is, and the driver only reads it during the call.
    #[allow(unsafe_code)]
    unsafe {
        context.bind_to_thread().map_err(pool_error)?;
        let pool = result::device::get_default_mem_pool(context.cu_device()).map_err(pool_error)?;
        result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .map_err(pool_error)
    }
}

#[cfg(feature = "cuda")]
fn pool_error(error: impl std::fmt::Display) -> EngineError {
    EngineError::Config(format!("cannot configure the CUDA memory pool: {error}"))
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(ordinal: usize) -> Result<Device> {
    Err(EngineError::Config(format!(
        "cuda:{ordinal}: this build has no CUDA backend; build with `--features cuda` \
         (docs/cuda.md) or use the CPU"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vllm_style_device_names() {
        assert_eq!(DeviceSpec::parse("cpu"), Some(DeviceSpec::Cpu));
        assert_eq!(DeviceSpec::parse("cuda"), Some(DeviceSpec::Cuda(0)));
        assert_eq!(DeviceSpec::parse("cuda:3"), Some(DeviceSpec::Cuda(3)));
        assert_eq!(DeviceSpec::parse("cuda:x"), None);
        assert_eq!(DeviceSpec::parse("gpu"), None);
        assert_eq!(DeviceSpec::Cuda(1).to_string(), "cuda:1");
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_cpu_build_refuses_cuda_with_the_way_out() {
        let error = DeviceSpec::Cuda(0)
            .open()
            .expect_err("no CUDA in this build")
            .to_string();
        assert!(error.contains("--features cuda"), "{error}");
        assert!(!cuda_available(0));
    }
}
