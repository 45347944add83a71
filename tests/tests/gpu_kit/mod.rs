//! Helpers of the GPU benchmark kit's CPU tests (gpu_bench_kit.rs, gpu_bench_kit_smoke.rs).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use pagoda_e2e::tools::repo_root;
use serde_json::Value;

pub const RUN_SH: &str = "bench/gpu/run.sh";
pub const PACK_SH: &str = "bench/gpu/pack.sh";
pub const MAKE_MODEL: &str = "bench/gpu/make_dummy_model.py";
pub const SUMMARIZE: &str = "bench/gpu/summarize.py";

/// Runs `program args…` from the repository root; echoes its output into the test log.
pub fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let output = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(repo_root())
        .output()
        .unwrap_or_else(|e| panic!("{program} does not run: {e}"));
    eprintln!(
        "[{program} {}]\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout)
    );
    eprintln!("[{program}] {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Runs `program args…` and fails the test unless it exits 0; returns its stdout.
pub fn run_ok(program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = run(program, args, env);
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `make_dummy_model.py --shape tiny` into `dir`.
pub fn tiny_model(dir: &Path) -> String {
    let out = dir.display().to_string();
    run_ok(
        "python3",
        &[MAKE_MODEL, "--shape", "tiny", "--out", &out],
        &[],
    );
    out
}

/// Benchmark 2's workload flags, as run.sh uses them.
pub fn serve_flags() -> Vec<String> {
    run_ok("bash", &[RUN_SH, "--print-serve-flags"], &[])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The value after `flag` in `flags`.
pub fn flag_value(flags: &[String], flag: &str) -> usize {
    let at = flags
        .iter()
        .position(|f| f == flag)
        .unwrap_or_else(|| panic!("run.sh's serve flags have no {flag}: {flags:?}"));
    flags[at + 1].parse().expect("a number")
}

/// `POST url` with a JSON body → (status, body).
pub fn post_json(url: &str, body: Value) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON body"))
    })
}

pub fn assert_all(result: &Value, key: &str, expected: u64, count: usize) {
    let values = result.get(key).and_then(Value::as_array).expect(key);
    assert_eq!(values.len(), count, "{key}: {values:?}");
    assert!(
        values.iter().all(|v| v.as_u64() == Some(expected)),
        "{key}: every request should have {expected}: {values:?}"
    );
}

/// The line of `markdown` that starts with `prefix`; fails the test when there is none.
pub fn line_starting<'a>(markdown: &'a str, prefix: &str) -> &'a str {
    markdown
        .lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{markdown}"))
}
