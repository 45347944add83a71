//! Where the workspace's binaries are: next to the running test's own directory
//! (`target/<profile>/deps/<test>` → `target/<profile>/<binary>`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The path of workspace binary `name` built with the same profile as this test.
pub fn binary_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from target/<profile>/deps");
    profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// Builds `pagoda-server` and `pagoda-bench` (a no-op when `cargo test --workspace` already did),
/// once per test process, so these tests never run stale binaries.
pub fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = Command::new(cargo);
        command.args([
            "build",
            "-p",
            "pagoda-server",
            "-p",
            "pagoda-bench",
            "--bins",
        ]);
        if binary_path("pagoda-bench")
            .parent()
            .is_some_and(|dir| dir.ends_with("release"))
        {
            command.arg("--release");
        }
        let status = command.status().expect("cargo runs");
        assert!(status.success(), "building the binaries failed");
    });
}

/// The variables `binary args…` (e.g. `--help`) documents: each flag's `[env: NAME]` and every
/// other `PAGODA_*` name the text mentions (such as `$PAGODA_MODEL_DIR`). A deployment file that
/// sets any other `PAGODA_*` name has a typo the binary would silently ignore.
pub fn env_vars_in_help(binary: &str, args: &[&str]) -> BTreeSet<String> {
    let output = Command::new(binary_path(binary))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{binary} {args:?} does not run: {e}"));
    assert!(output.status.success(), "{binary} {args:?} failed");
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut names: BTreeSet<String> = help
        .split("[env: ")
        .skip(1)
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            rest[..end].to_string()
        })
        .collect();
    let words = help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    names.extend(words.filter(|w| w.starts_with("PAGODA_")).map(String::from));
    names
}
