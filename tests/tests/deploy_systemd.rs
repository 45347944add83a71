//! `deploy/systemd/`: the unit passes `systemd-analyze verify` and `security --offline`, the
//! sysusers.d file creates its user for real, and the unit's ExecStart runs with its environment
//! file (only the model path and the port remapped): it serves, drains on SIGTERM within
//! TimeoutStopSec, and uses only the system calls and socket families the unit allows (strace).
//! Needs the Debian packages `systemd` (systemd-analyze, systemd-sysusers; no running systemd)
//! and `strace`.

// Shared by the deploy_* tests, each of which uses a part of it.
#[allow(dead_code)]
#[path = "deploy_support/launch.rs"]
mod launch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use launch::{assert_known_variables, default_model, get, post_json, remap, Env, Launched};
use pagoda_e2e::binaries::{binary_path, ensure_built};
use pagoda_e2e::tools::repo_file;

const UNIT: &str = "deploy/systemd/pagoda-server.service";
const ENV_FILE: &str = "deploy/systemd/pagoda-server.env";
const SYSUSERS: &str = "deploy/systemd/pagoda.sysusers";

/// `(section, key, value)` of every setting of the unit, in order.
fn unit_settings() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(repo_file(UNIT)).expect("the unit");
    let mut section = String::new();
    let mut settings = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            continue;
        }
        assert!(
            !line.ends_with('\\'),
            "{UNIT}: keep settings on one line: {line}"
        );
        let (key, value) = line.split_once('=').expect("KEY=value");
        settings.push((section.clone(), key.to_string(), value.to_string()));
    }
    settings
}

/// Every value of `key` in `section`.
fn values(section: &str, key: &str) -> Vec<String> {
    unit_settings()
        .into_iter()
        .filter(|(s, k, _)| s == section && k == key)
        .map(|(_, _, value)| value)
        .collect()
}

/// The single value of `[Service] key`.
fn service(key: &str) -> String {
    let found = values("Service", key);
    assert_eq!(
        found.len(),
        1,
        "{UNIT}: one {key}= expected, found {found:?}"
    );
    found[0].clone()
}

/// The environment file as systemd reads it (VAR=value lines; comments and blanks skipped).
fn env_file() -> Env {
    let text = std::fs::read_to_string(repo_file(ENV_FILE)).expect("the environment file");
    let mut env = Env::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').expect("VAR=value");
        assert!(
            !value.contains(['"', '\'', '\\', '$']),
            "{ENV_FILE}: {key}: no quotes, escapes or expansions, so every reader agrees"
        );
        env.insert(key.to_string(), value.to_string());
    }
    env
}

/// Runs `program args`; panics with the package to install when it is missing.
fn run(program: &str, args: &[&str], package: &str) -> Output {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} does not run ({e}): apt-get install {package}"));
    eprintln!(
        "[{program} {}] {}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A copy of the unit in `dir` with ExecStart pointing at the built binary (`verify` checks that
/// the executable exists) and `edit` applied to its text.
fn unit_copy(dir: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(repo_file(UNIT)).expect("the unit");
    let server = binary_path("pagoda-server").display().to_string();
    let text = text.replace(
        "ExecStart=/usr/local/bin/pagoda-server",
        &format!("ExecStart={server}"),
    );
    let path = dir.join("pagoda-server.service");
    std::fs::write(&path, edit(&text)).expect("write the unit copy");
    path
}

#[test]
fn the_unit_passes_systemd_analyze_verify() {
    ensure_built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let unit = unit_copy(dir.path(), str::to_string);
    let unit = unit.to_str().expect("a UTF-8 path");
    let output = run("systemd-analyze", &["verify", "--man=no", unit], "systemd");
    assert!(output.status.success(), "systemd-analyze verify failed");
    // verify exits 0 on unknown keys and bad values too, and says so on stderr.
    assert!(
        output.stderr.is_empty(),
        "systemd-analyze verify complained: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The same check sees a misspelt value: it would catch a broken unit.
    let broken = unit_copy(dir.path(), |text| {
        text.replace("ProtectSystem=strict", "ProtectSystem=stric")
    });
    let output = run(
        "systemd-analyze",
        &["verify", "--man=no", broken.to_str().expect("UTF-8")],
        "systemd",
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("stric"));
}

#[test]
fn the_units_exposure_level_is_low() {
    ensure_built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let unit = unit_copy(dir.path(), str::to_string);
    let output = run(
        "systemd-analyze",
        &[
            "security",
            "--offline=yes",
            "--no-pager",
            unit.to_str().expect("UTF-8"),
        ],
        "systemd",
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let level: f64 = text
        .split("Overall exposure level for pagoda-server.service:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|level| level.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{text}"));
    // 0 is fully locked down, 10 unprotected; systemd calls up to 2 "OK".
    assert!(level <= 2.0, "exposure level {level} > 2.0:\n{text}");
}

#[test]
fn sysusers_creates_the_units_user_with_the_images_uid() {
    let root = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(root.path().join("etc")).expect("etc/");
    let root_arg = format!("--root={}", root.path().display());
    let sysusers = repo_file(SYSUSERS).display().to_string();
    let output = run("systemd-sysusers", &[&root_arg, &sysusers], "systemd");
    assert!(output.status.success());
    let passwd = std::fs::read_to_string(root.path().join("etc/passwd")).expect("etc/passwd");
    let user = service("User");
    let home = format!("/var/lib/{}", service("StateDirectory"));
    let expected = format!("{user}:x:10001:10001:Pagoda LLM server:{home}:/usr/sbin/nologin");
    assert!(passwd.lines().any(|line| line == expected), "{passwd}");
    let group = std::fs::read_to_string(root.path().join("etc/group")).expect("etc/group");
    assert!(group
        .lines()
        .any(|line| line.starts_with(&format!("{}:x:10001:", service("Group")))));
}

#[test]
fn the_unit_declares_the_service_contract() {
    for (key, expected) in [
        ("Type", "exec"),
        ("ExecStart", "/usr/local/bin/pagoda-server"),
        ("EnvironmentFile", "/etc/pagoda/pagoda-server.env"),
        ("KillSignal", "SIGTERM"),
        ("Restart", "on-failure"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("CapabilityBoundingSet", ""),
    ] {
        assert_eq!(service(key), expected, "{UNIT}: {key}");
    }
    assert_ne!(service("User"), "root");
    for key in ["After", "Wants"] {
        assert!(values("Unit", key)
            .iter()
            .any(|v| v.contains("network-online.target")));
    }
    let nofile: u64 = service("LimitNOFILE").parse().expect("a number");
    assert!(nofile >= 65536, "LimitNOFILE={nofile}");
    assert_eq!(values("Install", "WantedBy"), ["multi-user.target"]);

    // systemd's SIGKILL must not land in the middle of the drain.
    let env = env_file();
    let drain: u64 = env["PAGODA_SHUTDOWN_TIMEOUT"].parse().expect("seconds");
    let stop: u64 = service("TimeoutStopSec").parse().expect("seconds");
    assert!(
        stop > drain,
        "TimeoutStopSec={stop} must exceed PAGODA_SHUTDOWN_TIMEOUT={drain}"
    );
    // The model is readable under ProtectHome/ProtectSystem: in the state directory.
    let state = format!("/var/lib/{}/", service("StateDirectory"));
    assert!(
        env["PAGODA_MODEL"].starts_with(&state),
        "PAGODA_MODEL outside {state}"
    );
}

/// The environment file, with the install paths mapped to this machine's model and a free port.
fn remapped_env() -> Env {
    let env = env_file();
    let model_dir = default_model()
        .parent()
        .expect("a directory")
        .display()
        .to_string();
    let pairs = [(env["PAGODA_MODEL_DIR"].clone(), model_dir)];
    let mut env: Env = env
        .iter()
        .map(|(key, value)| (key.clone(), remap(value, &pairs)))
        .collect();
    env.insert("PAGODA_PORT".into(), "0".into());
    env.insert("PAGODA_HOST".into(), "127.0.0.1".into());
    env
}

/// ExecStart's arguments after the program.
fn exec_start_args() -> Vec<String> {
    service("ExecStart")
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

#[test]
fn exec_start_with_the_env_file_serves_and_drains_within_timeout_stop_sec() {
    ensure_built();
    assert_known_variables(ENV_FILE, &env_file());
    let mut server = Launched::start(&[], &exec_start_args(), &remapped_env());
    assert_eq!(get(&server.url("/health")).0, 200);
    let stop = Duration::from_secs(service("TimeoutStopSec").parse().expect("seconds"));
    let status = server.terminate(stop);
    // Exit 0 after a drain: systemd records a clean stop, and Restart=on-failure stays quiet.
    assert_eq!(status.code(), Some(0), "{status}");
}

/// The system calls of `@group` (nested groups expanded), from `systemd-analyze syscall-filter`.
fn syscall_group(listing: &str, group: &str) -> Vec<String> {
    let mut in_group = false;
    let mut calls = Vec::new();
    for line in listing.lines() {
        if line.starts_with('@') {
            in_group = line.trim() == group;
            continue;
        }
        let name = line.trim();
        if !in_group || name.is_empty() || name.starts_with('#') {
            continue;
        }
        if name.starts_with('@') {
            calls.extend(syscall_group(listing, name));
        } else {
            calls.push(name.to_string());
        }
    }
    assert!(!calls.is_empty(), "no system calls in {group}");
    calls
}

/// The unit's SystemCallFilter as (allowed, denied) names.
fn syscall_filter() -> (Vec<String>, Vec<String>) {
    let listing = run(
        "systemd-analyze",
        &["syscall-filter", "--no-pager"],
        "systemd",
    );
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let (mut allowed, mut denied) = (Vec::new(), Vec::new());
    for value in values("Service", "SystemCallFilter") {
        let (list, entries) = match value.strip_prefix('~') {
            Some(rest) => (&mut denied, rest.to_string()),
            None => (&mut allowed, value),
        };
        for entry in entries.split_whitespace() {
            if entry.starts_with('@') {
                list.extend(syscall_group(&listing, entry));
            } else {
                list.push(entry.to_string());
            }
        }
    }
    (allowed, denied)
}

/// (system calls, socket address families) in an `strace -f` log.
fn traced(log: &str) -> (Vec<String>, Vec<String>) {
    let (mut calls, mut families) = (Vec::new(), Vec::new());
    for line in log.lines() {
        // "PID name(args…" or "PID <... name resumed>…"
        let Some(call) = line.split_whitespace().nth(1) else {
            continue;
        };
        let Some((name, args)) = call.split_once('(') else {
            continue;
        };
        if name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            if (name == "socket" || name == "socketpair") && args.starts_with("AF_") {
                families.push(args.trim_end_matches(',').to_string());
            }
            calls.push(name.to_string());
        }
    }
    calls.sort();
    calls.dedup();
    (calls, families)
}

#[test]
fn the_server_stays_inside_the_units_syscall_and_address_family_filters() {
    ensure_built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("strace.log");
    let wrapper: Vec<String> = ["strace", "-f", "-qq", "-o", log.to_str().expect("UTF-8")]
        .map(String::from)
        .to_vec();
    let mut server = Launched::start(&wrapper, &exec_start_args(), &remapped_env());
    let chat =
        serde_json::json!({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4});
    assert_eq!(post_json(&server.url("/v1/chat/completions"), chat).0, 200);
    let stream = serde_json::json!({"prompt": "Hi", "max_tokens": 4, "stream": true});
    assert_eq!(post_json(&server.url("/v1/completions"), stream).0, 200);
    assert_eq!(get(&server.url("/metrics")).0, 200);
    assert_eq!(server.terminate(Duration::from_secs(60)).code(), Some(0));

    let log = std::fs::read_to_string(&log).expect("the strace log");
    let (calls, families) = traced(&log);
    assert!(
        calls.contains(&"accept4".to_string()),
        "the trace misses the server: {calls:?}"
    );
    let (allowed, denied) = syscall_filter();
    let blocked: Vec<&String> = calls
        .iter()
        .filter(|call| !allowed.contains(call) || denied.contains(call))
        .collect();
    assert!(
        blocked.is_empty(),
        "SystemCallFilter would block {blocked:?}"
    );
    let allowed_families = service("RestrictAddressFamilies");
    for family in &families {
        assert!(
            allowed_families.split_whitespace().any(|f| f == family),
            "{family}"
        );
    }
}
