//! The servers and the load of the observability test: for each metric namespace a healthy
//! server, an overloaded one (slow, too little KV cache, more arrivals than it can serve) and a
//! faulty one (every request fails with a 500), plus a scrape target that is down; all scraped by
//! one real Prometheus that loads the repository's recording and alert rules.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pagoda_e2e::binaries::{binary_path, ensure_built};
use pagoda_e2e::prometheus::yaml_path;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::{default_model, repo_file};

pub const NAMESPACES: [&str; 2] = ["pagoda", "vllm"];
/// The Kubernetes-style labels every target gets, as a ServiceMonitor would add them.
pub const K8S_NAMESPACE: &str = "pagoda-test";
/// Grafana's $__rate_interval for these 1 s scrapes (at least four scrapes).
pub const RATE_INTERVAL: &str = "15s";
pub const DOWN_JOB: &str = "pagoda-down";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Healthy,
    Overloaded,
    Faulty,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Healthy, Role::Overloaded, Role::Faulty];

    fn name(self) -> &'static str {
        match self {
            Role::Healthy => "healthy",
            Role::Overloaded => "overloaded",
            Role::Faulty => "faulty",
        }
    }

    /// Mock engine settings that make the role's signals certain.
    fn server_args(self) -> Vec<&'static str> {
        match self {
            // 50 ms to the first token, 10 ms per token, plenty of KV cache.
            Role::Healthy => vec!["--mock-ttft-ms", "50", "--mock-tpot-ms", "10"],
            // Every request misses both SLOs (1.2 s TTFT > 1 s, 150 ms TPOT > 100 ms); 45 KV
            // blocks (16 MiB of the default f16 cache) for up to 16 sequences that grow by 48
            // tokens: full cache, preemptions, and a queue that grows since requests arrive
            // faster than they finish.
            Role::Overloaded => vec![
                "--mock-ttft-ms",
                "1200",
                "--mock-tpot-ms",
                "150",
                "--max-num-seqs",
                "16",
                "--kv-cache-memory",
                "16MiB",
                "--max-model-len",
                "256",
            ],
            // The first step of every request fails: HTTP 500.
            Role::Faulty => vec!["--mock-fail-after-tokens", "0"],
        }
    }
}

/// One pagoda-server, scraped as its own job `pagoda-<role>-<namespace>`.
pub struct Target {
    pub job: String,
    pub namespace: &'static str,
    pub role: Role,
    pub server: ServerProcess,
}

impl Target {
    fn start(role: Role, namespace: &'static str) -> Self {
        let mut args = vec![
            "--mock",
            "--disable-log-requests",
            "--metrics-namespace",
            namespace,
            "--served-model-name",
            role.name(),
        ];
        args.extend(role.server_args());
        Self {
            job: format!("pagoda-{}-{namespace}", role.name()),
            namespace,
            role,
            server: ServerProcess::start(&args),
        }
    }

    pub fn host_port(&self) -> &str {
        self.server.base_url.trim_start_matches("http://")
    }

    pub fn pod(&self) -> String {
        format!("{}-0", self.job)
    }
}

pub fn start_targets() -> Vec<Target> {
    ensure_built();
    NAMESPACES
        .iter()
        .flat_map(|namespace| Role::ALL.map(|role| Target::start(role, namespace)))
        .collect()
}

/// The test's Prometheus configuration: 1 s scrapes and rule evaluation, the repository's rule
/// files, one job per target and one job whose target refuses connections.
pub fn prometheus_config(targets: &[Target], closed_port: u16) -> String {
    let rules = ["pagoda-recording.rules.yml", "pagoda-alerts.rules.yml"]
        .map(|file| yaml_path(&repo_file(&format!("deploy/prometheus/rules/{file}"))));
    let mut config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n\
         rule_files:\n  - {}\n  - {}\nscrape_configs:\n",
        rules[0], rules[1]
    );
    let down = [(
        DOWN_JOB.to_string(),
        format!("127.0.0.1:{closed_port}"),
        "pagoda-down-0".to_string(),
    )];
    let jobs = targets
        .iter()
        .map(|t| (t.job.clone(), t.host_port().to_string(), t.pod()))
        .chain(down);
    for (job, address, pod) in jobs {
        config.push_str(&format!(
            "  - job_name: {job}\n    static_configs:\n      - targets: [\"{address}\"]\n        \
             labels: {{namespace: {K8S_NAMESPACE}, pod: {pod}}}\n"
        ));
    }
    config
}

/// Streams load into the healthy and overloaded servers with pagoda-bench for `duration`;
/// the returned processes are killed when the caller is done with them.
pub fn start_bench_load(targets: &[Target], duration: Duration) -> Vec<BenchProcess> {
    // pagoda-bench counts prompt tokens with the default model's tokenizer.
    let tokenizer = default_model().display().to_string();
    let seconds = duration.as_secs().to_string();
    targets
        .iter()
        .filter(|t| t.role != Role::Faulty)
        .map(|t| {
            // Healthy: 4 req/s of 20 + 16 tokens. Overloaded: 3 req/s of 5 + 48 tokens.
            let (rate, input_len, output_len) = match t.role {
                Role::Healthy => ("4", "20", "16"),
                _ => ("3", "5", "48"),
            };
            let child = Command::new(binary_path("pagoda-bench"))
                .args([
                    "serve",
                    "--base-url",
                    &t.server.base_url,
                    "--tokenizer",
                    &tokenizer,
                ])
                .args([
                    "--model",
                    t.role.name(),
                    "--request-rate",
                    rate,
                    "--duration",
                    &seconds,
                ])
                .args([
                    "--random-input-len",
                    input_len,
                    "--random-output-len",
                    output_len,
                ])
                .args(["--ignore-eos", "--disable-progress", "--seed", "7"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("pagoda-bench starts");
            BenchProcess(child)
        })
        .collect()
}

/// A pagoda-bench run, killed when dropped (overloaded servers never drain their queue).
pub struct BenchProcess(Child);

impl Drop for BenchProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends non-streamed chat requests to the faulty servers, 4 per second each, until `duration`
/// has passed; returns how many came back 500.
pub async fn drive_faulty(targets: &[Target], duration: Duration) -> usize {
    let client = reqwest::Client::new();
    let urls: Vec<String> = targets
        .iter()
        .filter(|t| t.role == Role::Faulty)
        .map(|t| t.server.url("/v1/chat/completions"))
        .collect();
    let body = serde_json::json!({
        "model": "faulty", "max_tokens": 8,
        "messages": [{"role": "user", "content": "Hello"}],
    });
    let deadline = Instant::now() + duration;
    let mut num_server_errors = 0;
    while Instant::now() < deadline {
        for url in &urls {
            let response = client
                .post(url)
                .json(&body)
                .send()
                .await
                .expect("request sent");
            num_server_errors += usize::from(response.status().as_u16() == 500);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    num_server_errors
}
