//! Runs what the manifests run: the Deployment's environment starts the real `pagoda-server`, and
//! the bench Job's script runs real `pagoda-bench` clients against a real server.

use std::collections::BTreeSet;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use pagoda_e2e::bench::{number, read_json};
use pagoda_e2e::binaries::{binary_path, ensure_built, env_vars_in_help};
use pagoda_e2e::server::{send_sigterm, ServerProcess};
use pagoda_e2e::tools::{default_model, repo_file};
use serde_json::Value;

use crate::launch::{container_env, http_get, http_post, EnvServer, Startup};
use crate::manifests::{at, container, env_value, find, i64_at, load_one, render, str_at};

/// A variable the program does not read is silently ignored: a renamed setting would leave the
/// server on its default (a drain of 30 s, say) with no error anywhere.
#[test]
fn every_variable_the_manifests_set_is_one_the_programs_read() {
    ensure_built();
    let server_reads = env_vars_in_help("pagoda-server", &["--help"]);
    assert!(
        server_reads.contains("PAGODA_SHUTDOWN_TIMEOUT"),
        "{server_reads:?}"
    );
    let gpu = render("gpu");
    for deployment in [
        &load_one("base/deployment.yaml"),
        find(&gpu, "Deployment", "pagoda-server"),
    ] {
        for name in env_names(container(deployment, "pagoda-server")) {
            let known = server_reads.contains(&name) || name == "RUST_LOG";
            assert!(known, "pagoda-server reads no {name}");
        }
    }
    let script = std::fs::read_to_string(repo_file("deploy/kubernetes/bench/run-bench.sh"))
        .expect("the script");
    let mut bench_reads: BTreeSet<String> = script
        .split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        .filter(|word| word.starts_with("BENCH_") || *word == "PAGODA_BENCH")
        .map(str::to_string)
        .collect();
    bench_reads.extend(env_vars_in_help("pagoda-bench", &["serve", "--help"]));
    bench_reads.insert("HOME".to_string());
    assert!(bench_reads.contains("OPENAI_API_KEY"), "{bench_reads:?}");
    let job = load_one("bench/bench-job.yaml");
    for name in env_names(container(&job, "pagoda-bench")) {
        assert!(
            bench_reads.contains(&name),
            "neither run-bench.sh nor pagoda-bench reads {name}"
        );
    }
}

/// Every variable a container sets, literal or not.
fn env_names(container: &Value) -> Vec<String> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| str_at(e, "/name").to_string())
        .collect()
}

/// The Deployment's environment, as the kubelet gives it (the model's /models path mapped to the
/// local copy; the port forced free), starts the real server; every probe path answers 200, the
/// HPA's metric is exported under the configured namespace, the served name answers a chat, and
/// SIGTERM drains and exits 0 within the grace period.
#[test]
fn the_deployments_environment_serves_the_model_and_passes_its_probes() {
    ensure_built();
    let deployment = load_one("base/deployment.yaml");
    let spec = container(&deployment, "pagoda-server");
    let mut server = match EnvServer::start(&container_env(spec)) {
        Startup::Listening(server) => server,
        Startup::Exited(code, log) => panic!("the server exited ({code:?}):\n{log}"),
    };
    serde_json::from_str::<Value>(&server.listening_line)
        .expect("PAGODA_LOG_FORMAT=json logs JSON");
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        let path = str_at(spec, &format!("/{probe}/httpGet/path"));
        let (status, body) = http_get(&format!("{}{path}", server.base_url));
        assert_eq!(status, 200, "{probe} {path}: {body}");
    }
    let namespace = env_value(spec, "PAGODA_METRICS_NAMESPACE").unwrap_or("pagoda");
    let served = env_value(spec, "PAGODA_SERVED_MODEL_NAME").expect("a served name");
    let (status, metrics) = http_get(&format!("{}/metrics", server.base_url));
    assert_eq!(status, 200);
    let series = format!("{namespace}:num_requests_waiting{{");
    let line = metrics
        .lines()
        .find(|l| l.starts_with(&series))
        .unwrap_or_else(|| panic!("no {series} series in:\n{metrics}"));
    assert!(line.contains(&format!("model_name=\"{served}\"")), "{line}");
    let (status, models) = http_get(&format!("{}/v1/models", server.base_url));
    assert_eq!(status, 200);
    assert!(models.contains(&format!("\"id\":\"{served}\"")), "{models}");
    let chat = serde_json::json!({"model": served, "max_tokens": 4,
        "messages": [{"role": "user", "content": "What is the capital of France?"}]});
    let (status, answer) = http_post(&format!("{}/v1/chat/completions", server.base_url), &chat);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"completion_tokens\":4"), "{answer}");
    let grace = i64_at(
        &deployment,
        "/spec/template/spec/terminationGracePeriodSeconds",
    );
    send_sigterm(server.pid());
    let code = server.wait_exit(Duration::from_secs(grace.unsigned_abs()));
    assert_eq!(
        code,
        Some(0),
        "SIGTERM ends the server within the grace period"
    );
}

/// The GPU overlay's environment, on this CPU build: every variable parses (a wrong name or value
/// would be a usage error, exit 2), and the server refuses to start only for want of CUDA. On a
/// CUDA build with a GPU it serves, and then its health probe must answer 200.
#[test]
fn the_gpu_environment_parses_and_asks_for_a_cuda_build() {
    ensure_built();
    let gpu = render("gpu");
    let deployment = find(&gpu, "Deployment", "pagoda-server");
    let spec = container(deployment, "pagoda-server");
    match EnvServer::start(&container_env(spec)) {
        Startup::Listening(server) => {
            let (status, body) = http_get(&format!("{}/health", server.base_url));
            assert_eq!(status, 200, "{body}");
        }
        Startup::Exited(code, log) => {
            assert!(
                code.is_some_and(|c| c != 0 && c != 2),
                "exit {code:?}:\n{log}"
            );
            assert!(
                log.contains("this build has no CUDA backend") && log.contains("--features cuda"),
                "not a CUDA refusal:\n{log}"
            );
        }
    }
}

/// Settings of one run of run-bench.sh (as the Job's env gives them), pointed at `base_url`.
fn script_settings(
    base_url: &str,
    pods: usize,
    results: &std::path::Path,
) -> Vec<(String, String)> {
    let settings = [
        ("BENCH_NUM_PODS", pods.to_string()),
        ("BENCH_BASE_URL", base_url.to_string()),
        ("BENCH_TOTAL_RATE", "30".to_string()),
        ("BENCH_NUM_PROMPTS", "31".to_string()),
        (
            "BENCH_WORKLOAD_ARGS",
            "--dataset-name random --random-input-len 32 --random-output-len 16".to_string(),
        ),
        ("BENCH_TOKENIZER", default_model().display().to_string()),
        ("BENCH_RESULTS_DIR", results.display().to_string()),
        ("BENCH_RUN_ID", "k8s-test".to_string()),
        ("BENCH_POLL_SECONDS", "0.2".to_string()),
        ("BENCH_START_TIMEOUT", "60".to_string()),
        ("BENCH_MERGE_TIMEOUT", "60".to_string()),
    ];
    settings.map(|(k, v)| (k.to_string(), v)).to_vec()
}

/// Starts `sh run-bench.sh` as pod `index` would run it, with the built pagoda-bench first on
/// PATH (the script's default PAGODA_BENCH is the name `pagoda-bench`).
fn spawn_script(index: usize, settings: &[(String, String)]) -> Child {
    let bin_dir = binary_path("pagoda-bench")
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&inherited)))
            .expect("a PATH");
    let mut command = Command::new("sh");
    command.arg(repo_file("deploy/kubernetes/bench/run-bench.sh"));
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("BENCH_") || name_text.starts_with("PAGODA_BENCH") {
            command.env_remove(&name);
        }
    }
    command
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .envs(settings.iter().map(|(k, v)| (k, v)))
        .env("PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs")
}

fn finish(index: usize, child: Child) -> Output {
    let output = child.wait_with_output().expect("the script ends");
    eprintln!("[pod {index}] {}", String::from_utf8_lossy(&output.stdout));
    eprintln!("[pod {index}] {}", String::from_utf8_lossy(&output.stderr));
    output
}

fn mock_server() -> ServerProcess {
    let model = default_model().display().to_string();
    ServerProcess::start(&[
        "--mock",
        "--model",
        &model,
        "--mock-ttft-ms",
        "20",
        "--mock-tpot-ms",
        "5",
        "--disable-log-requests",
    ])
}

/// Three "pods" run the Job's script at once against a real (mock-engine) server: each sends its
/// share with its own client id, and pod 0 merges the parts into a result of every request.
#[test]
fn the_bench_script_runs_three_clients_and_merges_their_parts() {
    ensure_built();
    let server = mock_server();
    let results = tempfile::tempdir().expect("temp dir");
    let settings = script_settings(&server.base_url, 3, results.path());
    let children: Vec<Child> = (0..3).map(|i| spawn_script(i, &settings)).collect();
    for (index, child) in children.into_iter().enumerate() {
        let output = finish(index, child);
        assert!(output.status.success(), "pod {index}: {}", output.status);
    }
    let run = results.path().join("k8s-test");
    let parts: Vec<Value> = (0..3)
        .map(|i| read_json(&run.join(format!("part-{i}.json"))))
        .collect();
    let merged = read_json(&run.join("merged.json"));
    let shares: Vec<f64> = parts.iter().map(|p| number(p, "num_prompts")).collect();
    assert_eq!(shares, [11.0, 10.0, 10.0], "31 prompts over 3 pods");
    let completed: f64 = parts.iter().map(|p| number(p, "completed")).sum();
    assert_eq!(completed, 31.0);
    assert_eq!(number(&merged, "completed"), completed);
    assert_eq!(number(&merged, "failed"), 0.0);
    assert_eq!(at(&merged, "/pagoda/run/num_clients"), 3);
    for (index, part) in parts.iter().enumerate() {
        assert_eq!(number(part, "request_rate"), 10.0, "a third of 30 req/s");
        let records = at(part, "/pagoda/records")
            .as_array()
            .expect("detailed records");
        assert_eq!(records.len() as f64, number(part, "num_prompts"));
        assert!(
            records.iter().all(|r| r["client_id"] == index),
            "part {index}'s client id"
        );
    }
}

/// Pod 0 never waits forever: not for a pod that never starts, nor for a part that never comes;
/// and a results directory of an earlier run is refused, not mixed in.
#[test]
fn the_bench_script_gives_up_at_its_deadlines_and_refuses_an_old_run() {
    ensure_built();
    let server = mock_server();
    let results = tempfile::tempdir().expect("temp dir");
    let mut settings = script_settings(&server.base_url, 2, results.path());
    for (name, value) in &mut settings {
        if name.ends_with("_TIMEOUT") {
            *value = "1".to_string();
        }
    }
    let alone = finish(0, spawn_script(0, &settings));
    let said = String::from_utf8_lossy(&alone.stderr).into_owned();
    assert!(
        !alone.status.success() && said.contains("no ready-* from pod(s) 1"),
        "{said}"
    );
    // Pod 1 is ready but never delivers: pod 0 runs its part, then gives up on the merge.
    let run = results.path().join("k8s-test");
    std::fs::write(run.join("ready-1"), "").expect("write");
    let waiting = finish(0, spawn_script(0, &settings));
    let said = String::from_utf8_lossy(&waiting.stderr).into_owned();
    assert!(
        !waiting.status.success() && said.contains("no result from pod(s) 1"),
        "{said}"
    );
    assert!(run.join("part-0.json").is_file() && !run.join("merged.json").exists());
    let again = finish(0, spawn_script(0, &settings));
    let said = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(
        !again.status.success() && said.contains("earlier run"),
        "{said}"
    );
}
