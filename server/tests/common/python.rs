//! Runs the unittest files of `tests/python` against a server: in `python3`, or in the
//! interpreter `$PAGODA_PYTHON` names. A missing module fails the test (never skips it): CI
//! installs them (`.ci/run`), so a missing one is a broken set-up, not a reason to pass.

use std::path::PathBuf;
use std::process::Command;

pub fn python() -> String {
    std::env::var("PAGODA_PYTHON").unwrap_or_else(|_| String::from("python3"))
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Fails unless `python` imports every module; prints their versions.
pub fn require_modules(python: &str, modules: &[&str]) {
    let code = format!(
        "import importlib\nfor name in {modules:?}:\n    m = importlib.import_module(name)\n    \
         print(name, getattr(m, '__version__', ''))"
    );
    let output = Command::new(python)
        .args(["-c", &code])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `{python}` ({e}): install python3 or set PAGODA_PYTHON")
        });
    assert!(
        output.status.success(),
        "Python modules {modules:?} are missing for `{python}`: `{python} -m pip install ...` \
         them (.ci/run does), or point PAGODA_PYTHON at an interpreter that has them\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "{} ({python})",
        String::from_utf8_lossy(&output.stdout).trim()
    );
}

/// Runs one unittest file of `tests/python` with `env` set; fails unless it reports OK.
pub fn run_unittest(script: &str, env: &[(&str, String)]) {
    let python = python();
    let path = repo_root().join("tests/python").join(script);
    let mut command = Command::new(&python);
    command
        .arg(&path)
        .arg("-v")
        .current_dir(repo_root())
        // Nothing between the client and the loopback server.
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env("PYTHONUNBUFFERED", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{python} {}`: {e}", path.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    // unittest reports on stderr.
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "tests/python/{script} failed ({}):\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains("\nOK"),
        "unittest did not report OK:\n{stderr}"
    );
}
