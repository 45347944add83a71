//! Runs the real `pagoda-bench` binary and reads the result files it writes.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::binaries::{binary_path, ensure_built};

/// Runs `pagoda-bench <args>`; returns its output after echoing it (test logs show it).
pub fn run_bench(args: &[&str]) -> Output {
    ensure_built();
    let output = Command::new(binary_path("pagoda-bench"))
        .args(args)
        .output()
        .expect("pagoda-bench runs");
    eprintln!("[pagoda-bench] {}", String::from_utf8_lossy(&output.stdout));
    eprintln!("[pagoda-bench] {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Runs `pagoda-bench <args>` and fails the test unless it exits 0.
pub fn run_bench_ok(args: &[&str]) -> Output {
    let output = run_bench(args);
    assert!(
        output.status.success(),
        "pagoda-bench {args:?} failed: {}",
        output.status
    );
    output
}

/// A JSON file written by a test run.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A number of a result file; fails the test when it is missing.
pub fn number(result: &Value, key: &str) -> f64 {
    result
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("result has no number {key:?}: {result}"))
}

/// The start of a `pagoda-bench serve` command line against the mock server at `base_url`:
/// model `mock`, the default model's tokenizer, no progress line.
pub fn serve_against_mock(base_url: &str) -> Vec<String> {
    let tokenizer = crate::tools::default_model().display().to_string();
    let args = [
        "serve",
        "--base-url",
        base_url,
        "--model",
        "mock",
        "--tokenizer",
    ];
    let mut args: Vec<String> = args.map(String::from).to_vec();
    args.push(tokenizer);
    args.push("--disable-progress".into());
    args
}
