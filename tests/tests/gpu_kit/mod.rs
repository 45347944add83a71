//! Helpers of the GPU benchmark kit's CPU tests (gpu_bench_kit.rs, gpu_bench_kit_smoke.rs).
#![allow(dead_code)]

use std::path::Path;

use pagoda_e2e::tools::run_program_ok;
use serde_json::Value;

pub const RUN_SH: &str = "bench/gpu/run.sh";
pub const PACK_SH: &str = "bench/gpu/pack.sh";
pub const MAKE_MODEL: &str = "bench/gpu/make_dummy_model.py";
pub const SUMMARIZE: &str = "bench/gpu/summarize.py";

/// `make_dummy_model.py --shape tiny` into `dir`.
pub fn tiny_model(dir: &Path) -> String {
    let out = dir.display().to_string();
    run_program_ok(
        "python3",
        &[MAKE_MODEL, "--shape", "tiny", "--out", &out],
        &[],
    );
    out
}

/// Benchmark 2's workload flags, as run.sh uses them.
pub fn serve_flags() -> Vec<String> {
    run_program_ok("bash", &[RUN_SH, "--print-serve-flags"], &[])
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
