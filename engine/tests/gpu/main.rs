//! GPU tests (`cargo test --features cuda --test gpu`): the CUDA kernels against the CPU
//! reference attention, and the engine on the GPU against the engine on the CPU. Each test
//! needs a working CUDA device; without one (or in a build without the `cuda` feature) it prints
//! why it is skipped and passes. bench/gpu/run.sh runs them on a GPU machine and keeps the output.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "cuda")]
#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "cuda")]
mod engine_parity;
#[cfg(feature = "cuda")]
mod kernels;

/// The GPU under test, or `None` after printing why the test is skipped.
#[cfg(feature = "cuda")]
pub fn gpu() -> Option<candle_core::Device> {
    match pagoda_engine::DeviceSpec::Cuda(0).open() {
        Ok(device) => Some(device),
        Err(error) => {
            eprintln!("SKIPPED: no usable CUDA device: {error}");
            None
        }
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn gpu_tests_need_the_cuda_feature() {
    eprintln!(
        "SKIPPED: the GPU tests need `--features cuda` (scripts/setup-cuda-toolchain.sh, docs/cuda.md)"
    );
    assert!(!pagoda_engine::device::cuda_compiled());
}
