//! `deploy/docker/compose.yaml`: valid for Docker Compose (`config`, no engine needed) with and
//! without its profiles; pinned images; mounts that exist and line up with the Prometheus
//! and Grafana files they feed; a stop grace period longer than the drain; and the server and
//! bench services' environment and commands run for real (image ENV + service environment,
//! container paths and service addresses remapped to this machine).

// Shared by the deploy_* tests, each of which uses a part of them.
#[allow(dead_code)]
#[path = "deploy_support/dockerfile.rs"]
mod dockerfile;
#[allow(dead_code)]
#[path = "deploy_support/launch.rs"]
mod launch;

use std::process::Command;
use std::time::Duration;

use launch::{assert_known_variables, command_succeeds, default_model, get, remap, Env, Launched};
use pagoda_e2e::binaries::{binary_path, ensure_built};
use pagoda_e2e::tools::{repo_file, run_tool, run_tool_ok, tool};
use serde_json::Value;

const COMPOSE: &str = "deploy/docker/compose.yaml";
const SERVER: &str = "pagoda-server";
const PROFILES: [&str; 4] = ["--profile", "gpu", "--profile", "bench"];

/// `docker-compose config --format json` with every profile, `vars` set for interpolation.
fn config(vars: &[(&str, &str)]) -> Value {
    let mut args = vec!["-f", COMPOSE];
    args.extend(PROFILES);
    args.extend(["config", "--format", "json"]);
    let output = Command::new(tool("docker-compose"))
        .args(&args)
        .envs(vars.iter().copied())
        .current_dir(repo_file(""))
        .output()
        .expect("docker-compose runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("compose config prints JSON")
}

fn service(config: &Value, name: &str) -> Value {
    let service = config["services"][name].clone();
    assert!(service.is_object(), "{COMPOSE}: no service {name}");
    service
}

fn strings(value: &Value) -> Vec<String> {
    let list = value.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .map(|item| item.as_str().expect("a string").to_string())
        .collect()
}

/// The bind mount of `service` at container path `target` → its (absolute) host source.
fn bind_source(service: &Value, target: &str) -> String {
    service["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|volume| volume["type"] == "bind" && volume["target"] == target)
        .and_then(|volume| volume["source"].as_str())
        .unwrap_or_else(|| panic!("no bind mount at {target}"))
        .to_string()
}

/// A Go duration as compose prints it (`45s`, `1m0s`, `1m30s`) in seconds.
fn seconds(duration: &str) -> u64 {
    let (mut total, mut number) = (0, String::new());
    for c in duration.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number
            .parse()
            .unwrap_or_else(|_| panic!("duration {duration}"));
        total += n * match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => panic!("duration {duration}: unit {c}"),
        };
        number.clear();
    }
    total
}

#[test]
fn compose_config_validates_with_and_without_profiles() {
    run_tool_ok("docker-compose", &["-f", COMPOSE, "config", "-q"]);
    let mut args = vec!["-f", COMPOSE];
    args.extend(PROFILES);
    args.extend(["config", "-q"]);
    run_tool_ok("docker-compose", &args);
    // The same validation refuses an unknown key: it is live.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bad = dir.path().join("compose.yaml");
    std::fs::write(
        &bad,
        "services:\n  x:\n    image: a:1\n    stop_grace: 1s\n",
    )
    .expect("write");
    let bad = bad.to_str().expect("UTF-8");
    assert!(!run_tool("docker-compose", &["-f", bad, "config", "-q"])
        .status
        .success());
}

#[test]
fn images_are_pinned_and_pagodas_follow_the_workspace_version() {
    let config = config(&[]);
    let version = env!("CARGO_PKG_VERSION");
    for (name, service) in config["services"].as_object().expect("services") {
        let image = service["image"].as_str().expect("an image");
        let (_, tag) = image.rsplit_once(':').expect("a tagged image");
        assert!(
            tag != "latest" && tag.contains(|c: char| c.is_ascii_digit()),
            "{name}: {image}"
        );
        if let Some(dockerfile) = service["build"]["dockerfile"].as_str() {
            let backend = if dockerfile.ends_with(".cuda") {
                "cuda"
            } else {
                "cpu"
            };
            assert_eq!(
                image,
                format!("pagoda/pagoda:{version}-{backend}"),
                "{name}"
            );
            assert!(repo_file(dockerfile).is_file(), "{name}: {dockerfile}");
        }
    }
}

#[test]
fn mounts_exist_and_line_up_with_prometheus_and_grafana() {
    let config = config(&[]);
    for (name, service) in config["services"].as_object().expect("services") {
        for volume in service["volumes"].as_array().expect("volumes") {
            let source = volume["source"].as_str().expect("a source");
            if volume["type"] == "bind" && volume["target"] != "/models" {
                assert!(
                    std::path::Path::new(source).exists(),
                    "{name}: {source} missing"
                );
                assert_eq!(volume["read_only"], true, "{name}: {source} read-only");
            }
        }
    }
    // Prometheus scrapes the server service by its compose name and container port.
    let prometheus = service(&config, "prometheus");
    let prometheus_dir = bind_source(&prometheus, "/etc/prometheus");
    let command = strings(&prometheus["command"]);
    assert!(command.contains(&"--config.file=/etc/prometheus/prometheus.yml".to_string()));
    let text = std::fs::read_to_string(format!("{prometheus_dir}/prometheus.yml")).expect("yml");
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).expect("prometheus.yml parses");
    let port = service(&config, SERVER)["ports"][0]["target"]
        .as_u64()
        .expect("a port");
    let target = format!("{SERVER}:{port}");
    let targets = serde_yaml::to_string(&yaml["scrape_configs"]).expect("yaml");
    assert!(
        targets.contains(&target),
        "prometheus.yml does not scrape {target}"
    );
    // Every rule file it loads is inside the mounted directory.
    for rules in yaml["rule_files"].as_sequence().expect("rule_files") {
        let rules = rules.as_str().expect("a path");
        assert!(
            std::path::Path::new(&format!("{prometheus_dir}/{rules}")).is_file(),
            "{rules}"
        );
    }

    let grafana = service(&config, "grafana");
    let provisioning = bind_source(&grafana, "/etc/grafana/provisioning");
    let text = std::fs::read_to_string(format!("{provisioning}/dashboards/pagoda.yaml"))
        .expect("the dashboard provider");
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).expect("pagoda.yaml parses");
    let path = yaml["providers"][0]["options"]["path"]
        .as_str()
        .expect("a path");
    assert_eq!(
        bind_source(&grafana, path),
        repo_file("grafana/dashboards").display().to_string()
    );
    let text = std::fs::read_to_string(format!("{provisioning}/datasources/prometheus.yaml"))
        .expect("the datasource");
    let prometheus_port = prometheus["ports"][0]["target"].as_u64().expect("a port");
    assert!(text.contains(&format!("url: http://prometheus:{prometheus_port}")));
}

#[test]
fn servers_outlive_their_drain_and_are_checked_on_health() {
    let config = config(&[]);
    for name in [SERVER, "pagoda-server-gpu"] {
        let service = service(&config, name);
        let image_env = image_env(&service);
        let env = service["environment"].as_object().expect("environment");
        let drain: u64 = env
            .get("PAGODA_SHUTDOWN_TIMEOUT")
            .and_then(Value::as_str)
            .or(image_env.get("PAGODA_SHUTDOWN_TIMEOUT").map(String::as_str))
            .unwrap_or("30")
            .parse()
            .expect("seconds");
        let grace = seconds(
            service["stop_grace_period"]
                .as_str()
                .expect("stop_grace_period"),
        );
        assert!(
            grace > drain,
            "{name}: stop_grace_period {grace}s <= drain {drain}s"
        );
        assert_eq!(service["stop_signal"], "SIGTERM", "{name}");
        let test = strings(&service["healthcheck"]["test"]).join(" ");
        assert!(
            test.contains("127.0.0.1:8000/health"),
            "{name}: healthcheck {test}"
        );
        let env: Env = env
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        assert_known_variables(name, &env);
    }
    let depends = &service(&config, "prometheus")["depends_on"][SERVER]["condition"];
    assert_eq!(depends, "service_healthy");
    let gpu = service(&config, "pagoda-server-gpu");
    let device = &gpu["deploy"]["resources"]["reservations"]["devices"][0];
    assert_eq!(device["driver"], "nvidia");
    assert_eq!(strings(&device["capabilities"]), ["gpu"]);
    assert_eq!(strings(&gpu["profiles"]), ["gpu"]);
    assert_eq!(strings(&service(&config, "bench")["profiles"]), ["bench"]);
}

/// The ENV of the image `service` builds.
fn image_env(service: &Value) -> Env {
    let dockerfile = service["build"]["dockerfile"].as_str().expect("a build");
    dockerfile::parse(&repo_file(dockerfile))
        .pop()
        .expect("a final stage")
        .env()
}

/// The container's environment: the image's ENV, then the service's `environment`.
fn container_env(service: &Value, pairs: &[(String, String)]) -> Env {
    let mut env = image_env(service);
    if let Some(declared) = service["environment"].as_object() {
        for (key, value) in declared {
            env.insert(key.clone(), value.as_str().expect("a string").to_string());
        }
    }
    env.iter()
        .map(|(key, value)| (key.clone(), remap(value, pairs)))
        .collect()
}

#[test]
fn the_server_and_bench_services_run_for_real() {
    ensure_built();
    let model_dir = default_model()
        .parent()
        .expect("a directory")
        .display()
        .to_string();
    let config = config(&[
        ("PAGODA_MODELS_DIR", &model_dir),
        // The compose file's own knobs: a short run of the real model on a small machine.
        ("PAGODA_BENCH_NUM_PROMPTS", "4"),
        ("PAGODA_BENCH_INPUT_LEN", "32"),
        ("PAGODA_BENCH_OUTPUT_LEN", "8"),
    ]);
    let server = service(&config, SERVER);
    let mut pairs = vec![("/models".to_string(), bind_source(&server, "/models"))];
    let mut env = container_env(&server, &pairs);
    env.insert("PAGODA_PORT".into(), "0".into());
    env.insert("PAGODA_HOST".into(), "127.0.0.1".into());
    let args: Vec<String> = strings(&server["command"])
        .iter()
        .map(|arg| remap(arg, &pairs))
        .collect();
    let mut running = Launched::start(&[], &args, &env);
    assert_eq!(get(&running.url("/health")).0, 200);
    let address = format!("127.0.0.1:{}", running.port);
    pairs.push(("127.0.0.1:8000".into(), address.clone()));
    pairs.push((format!("{SERVER}:8000"), address));
    let healthcheck = strings(&server["healthcheck"]["test"]);
    assert_eq!(healthcheck[0], "CMD");
    let healthcheck: Vec<String> = healthcheck[1..].iter().map(|a| remap(a, &pairs)).collect();
    assert!(
        command_succeeds(&healthcheck, &Env::new()),
        "the compose healthcheck fails"
    );

    run_bench_service(&config, pairs);
    let grace = seconds(
        server["stop_grace_period"]
            .as_str()
            .expect("a grace period"),
    );
    let status = running.terminate(Duration::from_secs(grace));
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Runs the bench service's entrypoint and command against the running server; its results
/// volume becomes a temporary directory.
fn run_bench_service(config: &Value, mut pairs: Vec<(String, String)>) {
    let bench = service(config, "bench");
    let results = tempfile::tempdir().expect("a temporary directory");
    let volume = bench["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|volume| volume["type"] == "volume")
        .expect("a results volume");
    let target = volume["target"].as_str().expect("a target").to_string();
    pairs.push((target, results.path().display().to_string()));
    let entrypoint = strings(&bench["entrypoint"]);
    assert_eq!(entrypoint, ["/usr/local/bin/pagoda-bench"]);
    let args: Vec<String> = strings(&bench["command"])
        .iter()
        .map(|arg| remap(arg, &pairs))
        .collect();
    let output = Command::new(binary_path("pagoda-bench"))
        .args(&args)
        .env_clear()
        .envs(container_env(&bench, &pairs))
        .output()
        .expect("pagoda-bench runs");
    eprintln!(
        "[bench] {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the bench service's command failed"
    );
    let saved = std::fs::read_dir(results.path())
        .expect("the results")
        .count();
    assert_eq!(saved, 1, "one result file in the bench-results volume");
}
