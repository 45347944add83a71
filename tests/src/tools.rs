//! External validators the deployment and observability tests run: `promtool` and `prometheus`
//! (Debian package `prometheus`), and the pinned PyPI tools `scripts/install-test-tools.sh`
//! puts in `.tools/bin` (or `$PAGODA_TOOLS_DIR/bin`). A missing tool fails the test with the
//! command that installs it: these tests never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (this crate lives in `<root>/tests`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The default model's file name (`scripts/fetch-default-model.sh`).
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The default model file, where `scripts/fetch-default-model.sh` puts it (`models/`, or
/// `$PAGODA_MODEL_DIR`); fails the test when it is not there.
pub fn default_model() -> PathBuf {
    let dir = std::env::var_os("PAGODA_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("models"));
    let path = dir.join(DEFAULT_MODEL_FILE);
    assert!(
        path.is_file(),
        "run scripts/fetch-default-model.sh ({} missing)",
        path.display()
    );
    path
}

/// A file of the repository, by its path from the root.
pub fn repo_file(relative: &str) -> PathBuf {
    repo_root().join(relative)
}

fn tools_bin_dir() -> PathBuf {
    match std::env::var_os("PAGODA_TOOLS_DIR") {
        Some(dir) => PathBuf::from(dir).join("bin"),
        None => repo_root().join(".tools").join("bin"),
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The path of tool `name`: `.tools/bin` first, then `PATH`; panics with the install command.
pub fn tool(name: &str) -> PathBuf {
    let pinned = tools_bin_dir().join(name);
    if pinned.is_file() {
        return pinned;
    }
    on_path(name).unwrap_or_else(|| {
        let install = match name {
            "promtool" | "prometheus" => "apt-get install prometheus",
            _ => "scripts/install-test-tools.sh",
        };
        panic!(
            "{name} is not installed (looked in {} and PATH): run `{install}`",
            tools_bin_dir().display()
        )
    })
}

/// Runs `tool args…` from the repository root and returns its output, echoed for the test log.
pub fn run_tool(name: &str, args: &[&str]) -> Output {
    run_program(&tool(name).display().to_string(), args, &[])
}

/// Runs `tool args…` and fails the test unless it exits 0; returns its stdout.
pub fn run_tool_ok(name: &str, args: &[&str]) -> String {
    run_program_ok(&tool(name).display().to_string(), args, &[])
}

/// Runs `program args…` (with extra environment `env`) from the repository root and returns its
/// output, echoed for the test log.
pub fn run_program(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
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
pub fn run_program_ok(program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = run_program(program, args, env);
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
