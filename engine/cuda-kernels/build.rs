//! Compiles `kernels/*.cu` to PTX with nvcc when the `cuda` feature is on (and does nothing
//! otherwise, so the CPU build needs no CUDA at all). The PTX is embedded with `include_str!` and
//! loaded through candle's module cache, on candle's stream.
//!
//! nvcc: `$NVCC`, else `$CUDA_HOME/bin/nvcc`, else `nvcc` on PATH. Architecture: `CUDA_COMPUTE_CAP`
//! (default 90, H100); PTX for `compute_XX` also runs on newer GPUs through the driver's JIT.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=kernels");
    for var in ["NVCC", "CUDA_HOME", "CUDA_COMPUTE_CAP", "NVCC_CCBIN"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let nvcc = env::var("NVCC")
        .ok()
        .or_else(|| {
            env::var("CUDA_HOME")
                .ok()
                .map(|home| format!("{home}/bin/nvcc"))
        })
        .unwrap_or_else(|| "nvcc".into());
    let compute_cap = env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
    let compute_cap = compute_cap.trim_end_matches('a');
    let mut sources: Vec<PathBuf> = std::fs::read_dir("kernels")
        .expect("kernels/ exists")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cu"))
        .collect();
    sources.sort();
    for source in sources {
        compile_ptx(&nvcc, compute_cap, &source, &out_dir);
    }
}

fn compile_ptx(nvcc: &str, compute_cap: &str, source: &Path, out_dir: &Path) {
    let name = source.file_stem().expect("a file name").to_string_lossy();
    let ptx = out_dir.join(format!("{name}.ptx"));
    let mut command = Command::new(nvcc);
    command
        .arg("--ptx")
        .arg(format!("-arch=compute_{compute_cap}"))
        .args(["-O3", "-std=c++17", "-lineinfo", "--expt-relaxed-constexpr"])
        .arg("-o")
        .arg(&ptx)
        .arg(source);
    if let Ok(ccbin) = env::var("NVCC_CCBIN") {
        command.arg("-ccbin").arg(ccbin);
    }
    let status = command.status().unwrap_or_else(|e| {
        panic!("cannot run {nvcc} ({e}): run scripts/setup-cuda-toolchain.sh and source its env.sh")
    });
    assert!(status.success(), "{nvcc} failed on {}", source.display());
}
