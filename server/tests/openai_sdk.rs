//! The official `openai` Python SDK drives the real server: chat, streaming, completions, `n` with
//! a seed, logprobs, stop strings, the model list, and errors surfacing as the SDK's exception
//! types. The checks are in `tests/python/test_openai_sdk.py` (plain unittest); this test starts
//! `pagoda-server` on the default model and runs that file against it.
//!
//! Needs the default model (`scripts/fetch-default-model.sh`) and the SDK
//! (`python3 -m pip install openai`; `.ci/run` installs it). `PAGODA_PYTHON` picks another
//! interpreter (a virtual environment's, say); the default is `python3`.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::server::ServerProcess;

const SERVED_NAME: &str = "smollm2";
const API_KEY: &str = "sdk-test-key";

fn python() -> String {
    std::env::var("PAGODA_PYTHON").unwrap_or_else(|_| String::from("python3"))
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Fails (never skips) when the SDK is missing: CI installs it, so a missing SDK is a broken
/// set-up, not a reason to pass.
fn require_sdk(python: &str) {
    let output = Command::new(python)
        .args(["-c", "import openai; print(openai.__version__)"])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `{python}` ({e}): install python3 or set PAGODA_PYTHON")
        });
    assert!(
        output.status.success(),
        "the openai Python SDK is missing for `{python}`: run `{python} -m pip install openai` \
         (or point PAGODA_PYTHON at an interpreter that has it)\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "openai SDK {} ({python})",
        String::from_utf8_lossy(&output.stdout).trim()
    );
}

#[test]
fn the_openai_python_sdk_drives_the_server() {
    let python = python();
    require_sdk(&python);
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 model path");
    let server = ServerProcess::start(&[
        "--model",
        model,
        "--served-model-name",
        SERVED_NAME,
        "--api-key",
        API_KEY,
    ]);
    let script = repo_root().join("tests/python/test_openai_sdk.py");
    let output = Command::new(&python)
        .arg(&script)
        .arg("-v")
        .current_dir(repo_root())
        .env("PAGODA_BASE_URL", server.url("/v1"))
        .env("PAGODA_API_KEY", API_KEY)
        .env("PAGODA_MODEL_NAME", SERVED_NAME)
        // Nothing between the SDK and the loopback server.
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env("PYTHONUNBUFFERED", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{python} {}`: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    // unittest reports on stderr.
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "tests/python/test_openai_sdk.py failed ({}):\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains("\nOK"),
        "unittest did not report OK:\n{stderr}"
    );
}
