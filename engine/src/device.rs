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
    Device::new_cuda_with_stream(ordinal).map_err(|e| {
        EngineError::Config(format!(
            "cannot open CUDA device {ordinal} ({e}); check the driver (nvidia-smi) and that \
             libcuda.so.1 and the CUDA 13 libraries are on the library path (docs/cuda.md)"
        ))
    })
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
