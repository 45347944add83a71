//! GPU tests (`cargo test --features cuda --test gpu`): the CUDA kernels against the CPU
//! reference attention, and the engine on the GPU against the engine on the CPU. Each test
//! needs a working CUDA device; without one (or in a build without the `cuda` feature) it prints
//! why it is skipped and passes — unless `PAGODA_REQUIRE_GPU=1` (bench/gpu/run.sh sets it on the
//! GPU machine), where a test that cannot open the device fails instead of skipping.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "cuda")]
#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "cuda")]
mod engine_parity;
#[cfg(feature = "cuda")]
mod fused;
#[cfg(feature = "cuda")]
mod grammar_sampling;
#[cfg(feature = "cuda")]
mod kernels;
#[cfg(feature = "cuda")]
mod sampling;

/// The GPU under test, or `None` after printing why the test is skipped.
#[cfg(feature = "cuda")]
pub fn gpu() -> Option<candle_core::Device> {
    match pagoda_engine::DeviceSpec::Cuda(0).open() {
        Ok(device) => Some(device),
        Err(error) if gpu_required() => {
            panic!("PAGODA_REQUIRE_GPU=1 but no usable CUDA device: {error}")
        }
        Err(error) => {
            eprintln!("SKIPPED: no usable CUDA device: {error}");
            None
        }
    }
}

/// `PAGODA_REQUIRE_GPU=1`: skipping is a failure (set where a GPU is expected).
pub fn gpu_required() -> bool {
    std::env::var("PAGODA_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

#[cfg(not(feature = "cuda"))]
#[test]
fn gpu_tests_need_the_cuda_feature() {
    assert!(
        !gpu_required(),
        "PAGODA_REQUIRE_GPU=1 but this build has no `cuda` feature: the GPU tests would all skip"
    );
    eprintln!(
        "SKIPPED: the GPU tests need `--features cuda` (scripts/setup-cuda-toolchain.sh, docs/cuda.md)"
    );
    assert!(!pagoda_engine::device::cuda_compiled());
}
