//! The `pagoda-generate` binary, run as a user would: JSON and streaming output with the default
//! model, and clear errors for a missing model or a bad flag.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn pagoda_generate(args: &[&str]) -> Output {
    pagoda_generate_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

fn pagoda_generate_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pagoda-generate"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("pagoda-generate runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn json_output_answers_the_question() {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 path");
    let output = pagoda_generate(&[
        "--model",
        model,
        "--weight-format",
        "f32",
        "--json",
        "--max-tokens",
        "32",
        "What is the capital of France?",
    ]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("stdout is one JSON object");
    let answer = json["text"].as_str().expect("a text field");
    assert!(answer.contains("Paris"), "{json}");
    assert_eq!(json["finish_reason"], "stop", "{json}");
    let completion_tokens = json["usage"]["completion_tokens"].as_u64().expect("usage");
    assert!((1..=32).contains(&completion_tokens), "{json}");
    assert_eq!(
        json["usage"]["total_tokens"].as_u64(),
        json["usage"]["prompt_tokens"]
            .as_u64()
            .map(|p| p + completion_tokens)
    );
    assert!(json["ttft_ms"].as_f64().is_some_and(|t| t > 0.0), "{json}");
    assert!(
        json["tokens_per_s"].as_f64().is_some_and(|t| t > 0.0),
        "{json}"
    );
    // Engine logs go to stderr, at info level.
    assert!(stderr.contains("KV cache: "), "stderr: {stderr}");
}

#[test]
fn default_mode_streams_text_and_summarises_on_stderr() {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 path");
    let output = pagoda_generate(&[
        "--model",
        model,
        "--weight-format",
        "f32",
        "--raw",
        "--max-tokens",
        "2",
        "--prompt",
        "The capital of France is",
    ]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    assert_eq!(text(&output.stdout), " Paris.\n");
    assert!(stderr.contains("2 generated tokens"), "stderr: {stderr}");
    assert!(stderr.contains("finish reason: length"), "stderr: {stderr}");
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let output = pagoda_generate(&["--model", "/nonexistent/model.gguf", "Hello"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("/nonexistent/model.gguf not found") && stderr.contains("--model PATH"),
        "stderr: {stderr}"
    );
}

#[test]
fn a_missing_default_model_says_how_to_fetch_it() {
    let empty = tempfile::tempdir().expect("a temporary directory");
    // Nowhere the default model is looked for holds it: not the working directory, not
    // $PAGODA_MODEL_DIR, not the cache.
    let output = Command::new(env!("CARGO_BIN_EXE_pagoda-generate"))
        .arg("Hello")
        .current_dir(empty.path())
        .env("PAGODA_MODEL_DIR", empty.path())
        .env("XDG_CACHE_HOME", empty.path())
        .env_remove("PAGODA_MODEL")
        .env_remove("RUST_LOG")
        .output()
        .expect("pagoda-generate runs");
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("default model missing")
            && stderr.contains("run scripts/fetch-default-model.sh"),
        "stderr: {stderr}"
    );
}

#[test]
fn a_negative_temperature_is_refused_before_loading() {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 path");
    let output = pagoda_generate(&["--model", model, "--temperature", "-1", "Hello"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("invalid --temperature") && stderr.contains("got -1"),
        "stderr: {stderr}"
    );
    assert!(!stderr.contains("KV cache: "), "stderr: {stderr}");
}

#[test]
fn a_prompt_is_required() {
    let output = pagoda_generate(&[]);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("<PROMPT|--prompt <TEXT>>"));
}

#[test]
fn the_kv_cache_dtype_comes_from_its_environment_variable() {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 path");
    let run = |value: &str| {
        Command::new(env!("CARGO_BIN_EXE_pagoda-generate"))
            .args(["--model", model, "--max-tokens", "2", "Hello"])
            .env("PAGODA_KV_CACHE_DTYPE", value)
            .env("RUST_LOG", "info")
            .output()
            .expect("pagoda-generate runs")
    };
    let refused = run("fp8");
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("fp8") && stderr.contains("auto, f32, f16, bf16"),
        "stderr: {stderr}"
    );
    let bf16 = run("bf16");
    let stderr = text(&bf16.stderr);
    assert!(bf16.status.success(), "stderr: {stderr}");
    assert!(
        stderr.contains("kv_cache_dtype=\"bf16\""),
        "stderr: {stderr}"
    );
}
