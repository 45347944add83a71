//! The official `openai` Python SDK drives the real server: chat, streaming, completions, `n` with
//! a seed, logprobs, stop strings, the model list, and errors surfacing as the SDK's exception
//! types (`tests/python/test_openai_sdk.py`); lm-eval-harness's log-likelihood requests and
//! vLLM's `prompt_logprobs` (`tests/python/test_loglikelihood_sdk.py`); vLLM's `return_token_ids`
//! (`tests/python/test_token_ids_sdk.py`); vLLM's `allowed_token_ids` and `bad_words`
//! (`tests/python/test_vocabulary_restrictions_sdk.py`); the Responses API (`tests/python/test_responses_sdk.py`);
//! structured outputs and tool calls
//! (`tests/python/test_structured_outputs_sdk.py`); LoRA adapters made by
//! `scripts/make-lora-adapter.py`, selected by `model` (`tests/python/test_lora_sdk.py`).
//! The checks are plain unittest files; these
//! tests start `pagoda-server` on the default model and run them against it.
//!
//! Needs the default model (`scripts/fetch-default-model.sh`) and the SDK
//! (`python3 -m pip install openai numpy gguf`; `.ci/run` installs them). `PAGODA_PYTHON` picks another
//! interpreter (a virtual environment's, say); the default is `python3`.

mod common;

use std::process::Command;

use common::python::{python, repo_root};
use common::server::ServerProcess;

const SERVED_NAME: &str = "smollm2";
const API_KEY: &str = "sdk-test-key";

/// Runs one unittest file of `tests/python` with the SDK tests' key and name, plus `env`.
fn run_python_tests(script: &str, env: &[(&str, String)]) {
    common::python::require_modules(&common::python::python(), &["openai"]);
    let mut all = vec![
        ("PAGODA_API_KEY", API_KEY.to_string()),
        ("PAGODA_MODEL_NAME", SERVED_NAME.to_string()),
    ];
    all.extend(env.iter().cloned());
    common::python::run_unittest(script, &all);
}

/// `pagoda-server` on the default model with the SDK tests' name and key, plus `extra` flags.
fn start_server(extra: &[&str]) -> ServerProcess {
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 model path");
    let mut args = vec![
        "--model",
        model,
        "--served-model-name",
        SERVED_NAME,
        "--api-key",
        API_KEY,
    ];
    args.extend_from_slice(extra);
    ServerProcess::start(&args)
}

#[test]
fn the_openai_python_sdk_drives_the_server() {
    let server = start_server(&[]);
    run_python_tests(
        "test_openai_sdk.py",
        &[("PAGODA_BASE_URL", server.url("/v1"))],
    );
    // lm-eval-harness's loglikelihood requests (echo, logprobs, prompt token ids) and vLLM's
    // `prompt_logprobs`.
    run_python_tests(
        "test_loglikelihood_sdk.py",
        &[("PAGODA_BASE_URL", server.url("/v1"))],
    );
    // vLLM's `return_token_ids` and `return_tokens_as_token_ids` (token-in, token-out loops).
    run_python_tests(
        "test_token_ids_sdk.py",
        &[("PAGODA_BASE_URL", server.url("/v1"))],
    );
    // vLLM's `allowed_token_ids` and `bad_words`.
    run_python_tests(
        "test_vocabulary_restrictions_sdk.py",
        &[("PAGODA_BASE_URL", server.url("/v1"))],
    );
    // OpenAI's Responses API: text, streamed events, parse, function calls continued through
    // `previous_response_id`, stored responses.
    run_python_tests(
        "test_responses_sdk.py",
        &[("PAGODA_BASE_URL", server.url("/v1"))],
    );
}

/// Structured outputs (pydantic `parse`, strict JSON schemas, regex, choice, grammar) and tool
/// calls (required, named, auto with the hermes parser, streamed through the SDK's helpers; the
/// deprecated `functions` too),
/// reasoning split by the qwen3 parser, bad inputs, and a compile timeout on a second server
/// whose limit every grammar exceeds.
#[test]
fn the_openai_python_sdk_gets_structured_outputs_and_tool_calls() {
    let server = start_server(&[
        "--tool-call-parser",
        "hermes",
        "--enable-auto-tool-choice",
        "--reasoning-parser",
        "qwen3",
    ]);
    let strict = start_server(&["--structured-output-timeout", "0.001"]);
    run_python_tests(
        "test_structured_outputs_sdk.py",
        &[
            ("PAGODA_BASE_URL", server.url("/v1")),
            ("PAGODA_TIMEOUT_BASE_URL", strict.url("/v1")),
        ],
    );
    // OpenAI's deprecated `functions` / `function_call`, answered in their own shape.
    run_python_tests(
        "test_legacy_functions_sdk.py",
        &[("PAGODA_BASE_URL", server.url("/v1"))],
    );
}

/// Writes an adapter for the default model with `scripts/make-lora-adapter.py` (PEFT's layout,
/// read from the GGUF's shapes; needs numpy and gguf, which `.ci/run` installs).
fn make_adapter(out: &std::path::Path, seed: u32) {
    let script = repo_root().join("scripts/make-lora-adapter.py");
    let output = Command::new(python())
        .arg(&script)
        .args([
            "--base",
            common::model_path().to_str().expect("a UTF-8 model path"),
        ])
        .args(["--out", out.to_str().expect("a UTF-8 path")])
        .args([
            "--rank",
            "8",
            "--alpha",
            "16",
            "--targets",
            "all",
            "--b-std",
            "0.02",
        ])
        .args(["--seed", &seed.to_string()])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "make-lora-adapter.py failed (python3 -m pip install numpy gguf):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// LoRA adapters made by the repository's script, selected through the SDK by `model`, listed
/// by `models.list()`, loaded and unloaded at runtime, unknown names as `NotFoundError`.
#[test]
fn the_openai_python_sdk_selects_lora_adapters() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (sql, chat, late) = (
        dir.path().join("sql"),
        dir.path().join("chat"),
        dir.path().join("late"),
    );
    make_adapter(&sql, 1);
    make_adapter(&chat, 2);
    make_adapter(&late, 3);
    let modules = [
        format!("sql={}", sql.display()),
        format!(
            r#"{{"name": "chat", "path": "{}", "base_model_name": "{SERVED_NAME}"}}"#,
            chat.display()
        ),
    ];
    let server = start_server(&[
        "--enable-lora",
        "--max-loras",
        "2",
        "--allow-runtime-lora-updating",
        "--max-model-len",
        "2048",
        "--kv-cache-memory",
        "128MiB",
        "--lora-modules",
        &modules[0],
        &modules[1],
    ]);
    run_python_tests(
        "test_lora_sdk.py",
        &[
            ("PAGODA_BASE_URL", server.url("/v1")),
            ("PAGODA_LATE_ADAPTER", late.display().to_string()),
        ],
    );
}
