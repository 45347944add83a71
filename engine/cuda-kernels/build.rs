//! Compiles `kernels/*.cu` to a fatbin with nvcc when the `cuda` feature is on (and does nothing
//! otherwise, so the CPU build needs no CUDA at all): SASS for sm_80 (A100, and every other
//! 8.x GPU: A10, L4, L40) and sm_90 (H100, H200), plus `CUDA_COMPUTE_CAP`'s when it is another, and
//! PTX of the highest of them, which the driver compiles on newer GPUs. The fatbin is embedded
//! with `include_bytes!` and loaded once per KV cache, so a known GPU starts with no JIT.
//!
//! nvcc: `$NVCC`, else `$CUDA_HOME/bin/nvcc`, else `nvcc` on PATH.

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
    let extra_cap = env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
    let mut caps: Vec<u32> = vec![80, 90];
    if let Ok(cap) = extra_cap.trim_end_matches('a').parse::<u32>() {
        caps.push(cap);
    }
    caps.sort_unstable();
    caps.dedup();
    let mut sources: Vec<PathBuf> = std::fs::read_dir("kernels")
        .expect("kernels/ exists")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cu"))
        .collect();
    sources.sort();
    for source in sources {
        compile_fatbin(&nvcc, &caps, &source, &out_dir);
    }
}

fn compile_fatbin(nvcc: &str, caps: &[u32], source: &Path, out_dir: &Path) {
    let name = source.file_stem().expect("a file name").to_string_lossy();
    let fatbin = out_dir.join(format!("{name}.fatbin"));
    let mut command = Command::new(nvcc);
    command
        .arg("--fatbin")
        .args(["-O3", "-std=c++17", "-lineinfo", "--expt-relaxed-constexpr"]);
    for cap in caps {
        command.arg(format!("-gencode=arch=compute_{cap},code=sm_{cap}"));
    }
    let newest = caps.last().expect("at least one architecture");
    command.arg(format!(
        "-gencode=arch=compute_{newest},code=compute_{newest}"
    ));
    command.arg("-o").arg(&fatbin).arg(source);
    if let Ok(ccbin) = env::var("NVCC_CCBIN") {
        command.arg("-ccbin").arg(ccbin);
    }
    let status = command.status().unwrap_or_else(|e| {
        panic!("cannot run {nvcc} ({e}): run scripts/setup-cuda-toolchain.sh and source its env.sh")
    });
    assert!(status.success(), "{nvcc} failed on {}", source.display());
}
