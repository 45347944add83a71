//! `deploy/docker/Dockerfile.{cpu,cuda}` and `.dockerignore`. No Docker engine runs here, so the
//! images are not built: the Dockerfiles are linted (hadolint), their contract is checked against
//! the workspace (bin names, members, version, model file name, the variables the binaries
//! read), and the image's ENTRYPOINT, ENV and HEALTHCHECK run for real against the local build.

#[path = "deploy_support/dockerfile.rs"]
mod dockerfile;
// Shared by the deploy_* tests, each of which uses a part of it.
#[allow(dead_code)]
#[path = "deploy_support/launch.rs"]
mod launch;

use std::process::Command;

use dockerfile::{exec_form, parse, Stage};
use launch::{assert_known_variables, command_succeeds, default_model, get, remap, Env, Launched};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::tools::{repo_file, repo_root, run_tool, run_tool_ok};
use serde_json::Value;

const DOCKERFILES: [&str; 2] = [
    "deploy/docker/Dockerfile.cpu",
    "deploy/docker/Dockerfile.cuda",
];
/// The image contract the compose file and the Kubernetes manifests rely on.
const UID_GID: &str = "10001:10001";
const BINARIES: [&str; 2] = ["pagoda-server", "pagoda-bench"];

fn stages(path: &str) -> Vec<Stage> {
    parse(&repo_file(path))
}

fn runtime(path: &str) -> Stage {
    stages(path).pop().expect("a final stage")
}

/// `cargo metadata` of the workspace (no dependencies).
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(repo_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn hadolint_finds_nothing_at_warning_level() {
    for path in DOCKERFILES {
        run_tool_ok(
            "hadolint",
            &["--failure-threshold", "warning", "--no-color", path],
        );
    }
    // The same call fails on a Dockerfile with the usual mistakes: the lint is live.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bad = dir.path().join("Dockerfile");
    std::fs::write(
        &bad,
        "FROM debian:latest\nRUN apt-get update && apt-get install curl\n",
    )
    .expect("write");
    let bad = bad.to_str().expect("UTF-8");
    let output = run_tool(
        "hadolint",
        &["--failure-threshold", "warning", "--no-color", bad],
    );
    assert!(
        !output.status.success(),
        "hadolint accepted `FROM debian:latest`"
    );
}

#[test]
fn base_images_are_pinned_to_versions() {
    for path in DOCKERFILES {
        for stage in stages(path) {
            let (image, tag) = stage
                .base
                .rsplit_once(':')
                .unwrap_or_else(|| panic!("{path}: FROM {} has no tag", stage.base));
            assert!(
                !image.contains('$'),
                "{path}: FROM {}: literal images only",
                stage.base
            );
            assert!(
                tag != "latest" && tag.contains(|c: char| c.is_ascii_digit()),
                "{path}: FROM {}: pin a version",
                stage.base
            );
        }
    }
}

/// The names of the workspace's binaries.
fn workspace_bins(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().expect("packages");
    packages
        .iter()
        .flat_map(|package| package["targets"].as_array().expect("targets").iter())
        .filter(|target| {
            let kinds = target["kind"].as_array().expect("kinds");
            kinds.contains(&"bin".into())
        })
        .map(|target| target["name"].as_str().expect("a name").to_string())
        .collect()
}

/// The workspace members' directories, relative to the root.
fn workspace_members(metadata: &Value) -> Vec<String> {
    let root = metadata["workspace_root"].as_str().expect("a root");
    let packages = metadata["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|package| {
            let manifest = package["manifest_path"].as_str().expect("a manifest path");
            let dir = manifest.trim_end_matches("/Cargo.toml");
            dir.trim_start_matches(root)
                .trim_start_matches('/')
                .to_string()
        })
        .collect()
}

/// The sources of a stage's `COPY` instructions (destinations and flags left out).
fn copy_sources(stage: &Stage) -> Vec<String> {
    stage
        .all("COPY")
        .iter()
        .flat_map(|args| {
            let words: Vec<&str> = args.split_whitespace().collect();
            words[..words.len() - 1].to_vec()
        })
        .filter(|word| !word.starts_with("--"))
        .map(String::from)
        .collect()
}

#[test]
fn the_builder_stage_copies_every_workspace_member() {
    let members = workspace_members(&metadata());
    assert!(members.len() >= 4, "{members:?}");
    for path in DOCKERFILES {
        let stages = stages(path);
        assert!(stages.len() >= 2, "{path}: multi-stage expected");
        assert_eq!(stages[0].name.as_deref(), Some("builder"), "{path}");
        let copied = copy_sources(&stages[0]);
        // Cargo loads every member; pagoda-server embeds scripts/fetch-default-model.sh.
        let needed = ["Cargo.toml", "Cargo.lock", "scripts"].map(String::from);
        for needed in members.iter().chain(&needed) {
            // A member inside a copied folder (engine/cuda-kernels in engine/) is copied with it.
            let is_copied = copied
                .iter()
                .any(|source| needed == source || needed.starts_with(&format!("{source}/")));
            assert!(is_copied, "{path}: the builder does not COPY {needed}");
        }
    }
}

#[test]
fn the_real_binaries_are_built_and_reach_the_runtime_stage() {
    let bins = workspace_bins(&metadata());
    for path in DOCKERFILES {
        let stages = stages(path);
        let build = stages[0].all("RUN").join(" ");
        let words: Vec<&str> = build.split_whitespace().collect();
        assert!(words.contains(&"--locked"), "{path}: build with --locked");
        for bin in BINARIES {
            assert!(
                bins.iter().any(|b| b == bin),
                "{bin} is not a workspace binary: {bins:?}"
            );
            let built = words.windows(2).any(|pair| pair == ["--bin", bin]);
            assert!(built, "{path}: builds no {bin}");
        }
        let runtime = stages.last().expect("a final stage");
        let expected = format!(
            "--from=builder {} /usr/local/bin/",
            BINARIES.map(|bin| format!("/out/{bin}")).join(" ")
        );
        assert_eq!(
            runtime.one("COPY"),
            expected,
            "{path}: both binaries into /usr/local/bin"
        );
        let entrypoint = exec_form(runtime.one("ENTRYPOINT"));
        assert_eq!(entrypoint, ["/usr/local/bin/pagoda-server"], "{path}");
    }
}

#[test]
fn the_runtime_stage_keeps_the_image_contract() {
    let version = metadata()["packages"][0]["version"]
        .as_str()
        .expect("a version")
        .to_string();
    for path in DOCKERFILES {
        let stage = runtime(path);
        let user = stage.one("USER");
        assert_eq!(user, UID_GID, "{path}: USER (numeric, for runAsNonRoot)");
        let setup = stage.all("RUN").join("\n");
        assert!(setup.contains("--gid 10001 pagoda") && setup.contains("--uid 10001"));
        assert_eq!(stage.one("VOLUME"), "/models", "{path}");
        assert_eq!(stage.one("EXPOSE"), "8000", "{path}");
        assert_eq!(
            stage.env()["PAGODA_PORT"],
            "8000",
            "{path}: EXPOSE follows PAGODA_PORT"
        );
        assert_eq!(stage.one("STOPSIGNAL"), "SIGTERM", "{path}");
        let health = stage.one("HEALTHCHECK");
        assert!(health.contains("/health"), "{path}: HEALTHCHECK {health}");
        let version_arg = format!("PAGODA_VERSION={version}");
        assert!(
            stage.all("ARG").contains(&version_arg.as_str()),
            "{path}: {version_arg}"
        );
        let labels = stage.one("LABEL");
        for label in ["title", "version", "source", "licenses", "revision"] {
            assert!(labels.contains(&format!("org.opencontainers.image.{label}=")));
        }
    }
}

#[test]
fn the_image_environment_names_the_fetched_model_in_the_volume() {
    let script = std::fs::read_to_string(repo_file("scripts/fetch-default-model.sh"))
        .expect("the fetch script");
    let model_file = script
        .lines()
        .find_map(|line| line.strip_prefix("MODEL_FILE="))
        .expect("MODEL_FILE= in the fetch script")
        .trim_matches('"');
    for path in DOCKERFILES {
        let env = runtime(path).env();
        assert_eq!(
            env["PAGODA_MODEL"],
            format!("/models/{model_file}"),
            "{path}"
        );
        assert_known_variables(path, &env);
    }
}

/// Whether a `.dockerignore` pattern (`*` within a name, `**` across directories) excludes
/// `path` or one of its parent directories.
fn ignored(pattern: &str, path: &str) -> bool {
    fn matches(pattern: &[&str], path: &[&str]) -> bool {
        match (pattern.first(), path.first()) {
            (None, _) => true, // a matched directory excludes what is inside it
            (Some(&"**"), _) => (0..=path.len()).any(|skip| matches(&pattern[1..], &path[skip..])),
            (Some(_), None) => false,
            (Some(glob), Some(name)) => glob_name(glob, name) && matches(&pattern[1..], &path[1..]),
        }
    }
    fn glob_name(glob: &str, name: &str) -> bool {
        match glob.split_once('*') {
            None => glob == name,
            Some((prefix, rest)) => {
                name.starts_with(prefix)
                    && (prefix.len()..=name.len())
                        .any(|start| glob_name(rest, &name[start..]) || rest.is_empty())
            }
        }
    }
    let pattern: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    matches(&pattern, &path.split('/').collect::<Vec<_>>())
}

#[test]
fn the_dockerignore_matcher_follows_dockers_rules() {
    assert!(ignored("target", "target/release/pagoda-server"));
    assert!(
        !ignored("target", "engine/target"),
        "patterns are anchored at the root"
    );
    assert!(ignored("**/*.gguf", "models/a/x.gguf"));
    assert!(ignored("**/*.gguf", "x.gguf"));
    assert!(!ignored("**/*.gguf", "engine/src/models/gguf.rs"));
    assert!(ignored("bench/results", "bench/results/run.json"));
    assert!(!ignored("bench/results", "bench/serve_mock_cpu.sh"));
    assert!(ignored("**/__pycache__", "tests/python/__pycache__/x.pyc"));
}

#[test]
fn dockerignore_drops_build_output_and_keeps_every_file_the_build_copies() {
    let text = std::fs::read_to_string(repo_file(".dockerignore")).expect("the .dockerignore");
    let patterns: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    assert!(
        patterns.iter().all(|p| !p.starts_with('!')),
        "negations are not checked here"
    );
    let excluded = |path: &str| patterns.iter().any(|pattern| ignored(pattern, path));
    for heavy in [
        ".git",
        "target",
        "models",
        ".tools",
        "bench/results",
        "models/x.gguf",
    ] {
        assert!(
            excluded(heavy),
            ".dockerignore keeps {heavy} in the build context"
        );
    }
    let copied: Vec<String> = DOCKERFILES
        .iter()
        .flat_map(|path| copy_sources(&stages(path)[0]))
        .collect();
    let listed = Command::new("git")
        .args(["ls-files", "--"])
        .args(&copied)
        .current_dir(repo_root())
        .output()
        .expect("git ls-files runs");
    let files = String::from_utf8_lossy(&listed.stdout);
    assert!(
        files.lines().count() > 50,
        "git ls-files found too little: {files}"
    );
    let dropped: Vec<&str> = files.lines().filter(|file| excluded(file)).collect();
    assert!(
        dropped.is_empty(),
        ".dockerignore drops files the build copies: {dropped:?}"
    );
}

/// Runs the image's ENTRYPOINT with its ENV (the volume mapped to the local models directory,
/// a free port), checks /health, and runs its HEALTHCHECK command against it, before and after
/// the server stops.
fn run_image_entrypoint(path: &str) {
    ensure_built();
    let stage = runtime(path);
    let model_dir = default_model()
        .parent()
        .expect("a directory")
        .display()
        .to_string();
    let pairs = [("/models".to_string(), model_dir)];
    let mut env: Env = stage
        .env()
        .iter()
        .map(|(key, value)| (key.clone(), remap(value, &pairs)))
        .collect();
    env.insert("PAGODA_PORT".into(), "0".into());
    env.insert("PAGODA_HOST".into(), "127.0.0.1".into());
    let entrypoint = exec_form(stage.one("ENTRYPOINT"));
    assert_eq!(
        entrypoint.len(),
        1,
        "the ENTRYPOINT takes no arguments here"
    );
    let mut server = Launched::start(&[], &[], &env);
    assert_eq!(get(&server.url("/health")).0, 200);

    let health = stage.one("HEALTHCHECK");
    let command = exec_form(
        health
            .split_once("CMD ")
            .expect("HEALTHCHECK … CMD [...]")
            .1,
    );
    let port = Env::from([("PAGODA_PORT".to_string(), server.port.to_string())]);
    assert!(
        command_succeeds(&command, &port),
        "{path}: HEALTHCHECK fails on a healthy server"
    );
    assert_eq!(
        server.terminate(std::time::Duration::from_secs(40)).code(),
        Some(0)
    );
    assert!(
        !command_succeeds(&command, &port),
        "{path}: HEALTHCHECK passes with no server"
    );
}

#[test]
fn the_cpu_images_entrypoint_env_and_healthcheck_run() {
    run_image_entrypoint(DOCKERFILES[0]);
}

#[test]
fn the_cuda_images_entrypoint_env_and_healthcheck_run_on_the_cpu_build() {
    run_image_entrypoint(DOCKERFILES[1]);
}
