//! The GPU benchmark kit as the GPU machine runs it, on the CPU (see gpu_bench_kit.rs): pack.sh
//! packs this build's binaries and stand-ins for the CUDA-only executables, and `run.sh --smoke`
//! runs every step from the carry folder. No GPU or nvcc needed; needs python3 and bash.

mod gpu_kit;

use std::path::{Path, PathBuf};
use std::process::Command;

use pagoda_e2e::bench::{number, read_json};
use pagoda_e2e::binaries::{binary_path, ensure_built};
use pagoda_e2e::prometheus::free_port;

use gpu_kit::*;
use pagoda_e2e::tools::{run_program, run_program_ok};

/// A stand-in for a CUDA-only executable: a shell script.
fn write_script(path: &Path, body: &str) {
    std::fs::write(
        path,
        format!("#!/usr/bin/env bash\nset -euo pipefail\n{body}\n"),
    )
    .expect("script");
    let status = Command::new("chmod")
        .args(["+x", &path.display().to_string()])
        .status()
        .expect("chmod");
    assert!(status.success());
}

/// The whole kit as the GPU machine runs it, on the CPU: pack.sh packs the binaries of this
/// build (and stand-ins for the CUDA executables) into a carry folder, and run.sh --smoke unpacks
/// them and runs all four steps with the tiny shape on `--device cpu`.
#[test]
fn run_sh_smoke_runs_every_step_from_a_packed_carry_folder() {
    ensure_built();
    let dir = tempfile::tempdir().expect("temp dir");
    let from = dir.path().join("built");
    std::fs::create_dir_all(&from).expect("dir");
    for name in ["pagoda-server", "pagoda-bench"] {
        std::os::unix::fs::symlink(binary_path(name), from.join(name)).expect("symlink");
    }
    // The decode benchmark's line format (summarize.py's header documents it).
    write_script(
        &from.join("gpu_decode_bench"),
        r#"out=
while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2 ;; --model|--batch-sizes|--context-len) shift 2 ;; *) echo "unexpected $1" >&2; exit 2 ;; esac; done
{
  echo '{"kind":"machine","gpu":"stand-in","measured_bandwidth_gbps":3000.0}'
  echo '{"batch_size":1,"context_len":512,"step_ms_mean":1.1,"step_ms_p50":1.0,"floor_ms":0.5,"weights_bytes":1000,"kv_bytes_read":10,"bandwidth_gbps":1500.0}'
} >"$out""#,
    );
    write_script(
        &from.join("gpu_tests_standin"),
        r#"[ "$*" = "--test-threads=1 --nocapture" ] || { echo "unexpected arguments: $*" >&2; exit 2; }
echo "test result: ok. 1 passed; 0 failed""#,
    );
    let carry = dir.path().join("carry");
    let packed = run_program_ok(
        "bash",
        &[
            PACK_SH,
            "--from",
            &from.display().to_string(),
            "--carry-dir",
            &carry.display().to_string(),
            "--max-mib",
            "1024",
        ],
        &[],
    );
    assert!(packed.contains("total: "), "{packed}");
    for name in [
        "pagoda-server",
        "pagoda-bench",
        "gpu_decode_bench",
        "gpu_tests_standin",
    ] {
        assert!(
            carry.join("bin").join(format!("{name}.gz")).is_file(),
            "{name}.gz"
        );
    }
    assert!(carry.join("REVISION").is_file());

    let out: PathBuf = dir.path().join("out");
    let port = free_port().to_string();
    let output = run_program(
        "bash",
        &[
            RUN_SH,
            "--smoke",
            "--carry-dir",
            &carry.display().to_string(),
            "--port",
            &port,
        ],
        &[("OUT", &out.display().to_string())],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "run.sh --smoke failed:\n{stdout}");

    let summary = read_json(&out.join("summary.json"));
    let steps: Vec<(String, String)> = summary["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("").to_string(),
                s["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["gpu_tests", "decode_bench", "serve", "sweep"]);
    assert!(steps.iter().all(|(_, status)| status == "ok"), "{steps:?}");
    assert_eq!(summary["device"], "cpu");
    let machine = std::fs::read_to_string(out.join("machine.txt")).expect("machine.txt");
    let revision = std::fs::read_to_string(carry.join("REVISION")).expect("REVISION");
    assert!(
        machine.contains(&format!(
            "revision: {}",
            revision.lines().next().unwrap_or("?")
        )),
        "{machine}"
    );

    let serve = read_json(&out.join("serve_tiny.json"));
    let requested = number(&summary["params"], "serve_num_prompts");
    assert_eq!(number(&serve, "completed"), requested);
    assert_eq!(
        number(&serve, "total_output_tokens"),
        requested * flag_value(&serve_flags(), "--random-output-len") as f64
    );
    assert_eq!(serve["shape"], "tiny");
    // The same workload sampled off the argmax (temperature, top_p), on the same server.
    let sampled = read_json(&out.join("serve_tiny_sampled.json"));
    let requested = number(&summary["params"], "serve_sampled_num_prompts");
    assert_eq!(number(&sampled, "completed"), requested);
    assert_eq!(sampled["sampling"], "temperature 0.8, top_p 0.95");
    let sweep = read_json(&out.join("sweep_tiny").join("summary.json"));
    let rates = summary["params"]["sweep_rates"].as_str().expect("rates");
    assert_eq!(
        sweep["rows"].as_array().map(Vec::len),
        Some(rates.split(',').count()),
        "{sweep}"
    );

    let markdown = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(stdout.contains(&markdown), "run.sh prints summary.md");
    assert_eq!(
        line_starting(&markdown, "| 1 |"),
        "| 1 | 1.00 ms | 1.10 ms | 0.50 ms | 50% | 1,500 | 1,000 | — | — | — | — |"
    );
    line_starting(&markdown, "| **Pagoda** (this run) |");
    for rate in rates.split(',') {
        line_starting(&markdown, &format!("| {rate} |"));
    }
    assert!(
        markdown.contains("**Steps:** gpu_tests ok") && markdown.contains("sweep ok"),
        "{markdown}"
    );
}
