//! Where the workspace's binaries are: next to the running test's own directory
//! (`target/<profile>/deps/<test>` → `target/<profile>/<binary>`).

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
