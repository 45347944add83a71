//! Starting `pagoda-server` with a container's environment (which `ServerProcess` cannot pass),
//! and plain HTTP GETs.

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pagoda_e2e::binaries::binary_path;
use pagoda_e2e::server::{forward_stderr, listening_url};
use pagoda_e2e::tools::default_model;
use serde_json::Value;

use crate::manifests::str_at;

/// A container's environment as the kubelet would set it on this host: `/models/…` values point
/// at the local copy of the model; an optional Secret's key is left unset (the Secret is absent
/// here, as in a cluster without one). Any other source fails the test: add it here.
pub fn container_env(container: &Value) -> Vec<(String, String)> {
    let models_dir = default_model()
        .parent()
        .expect("the model's directory")
        .display()
        .to_string();
    let mut env = Vec::new();
    for entry in container["env"].as_array().into_iter().flatten() {
        let name = str_at(entry, "/name").to_string();
        if let Some(value) = entry["value"].as_str() {
            let value = match value.strip_prefix("/models/") {
                Some(file) => format!("{models_dir}/{file}"),
                None => value.to_string(),
            };
            env.push((name, value));
        } else {
            let secret = &entry["valueFrom"]["secretKeyRef"];
            assert_eq!(
                secret["optional"], true,
                "{name}: only optional Secret keys are expected"
            );
        }
    }
    assert!(
        container.get("args").is_none(),
        "the server is configured by env alone"
    );
    env
}

/// How a server started.
#[derive(Debug)]
pub enum Startup {
    Listening(EnvServer),
    /// Its exit code and everything it said.
    Exited(Option<i32>, String),
}

/// `pagoda-server --host 127.0.0.1 --port 0` with an environment; killed when dropped.
#[derive(Debug)]
pub struct EnvServer {
    child: Child,
    pub base_url: String,
    /// The log line that says where it listens.
    pub listening_line: String,
}

impl EnvServer {
    /// Starts the server with exactly `env` among PAGODA_… variables (the flags win over the
    /// env's port and host) and waits until it listens or exits.
    pub fn start(env: &[(String, String)]) -> Startup {
        let mut command = Command::new(binary_path("pagoda-server"));
        command.args(["--host", "127.0.0.1", "--port", "0"]);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("PAGODA_") || name == "RUST_LOG" {
                command.env_remove(&name);
            }
        }
        let mut child = command
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pagoda-server starts");
        let lines = forward_stderr(&mut child, "server");
        wait_listening(child, &lines)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `timeout` for the process to exit; its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

fn wait_listening(mut child: Child, lines: &mpsc::Receiver<String>) -> Startup {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut said = Vec::new();
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                if let Some(base_url) = listening_url(&line) {
                    return Startup::Listening(EnvServer {
                        child,
                        base_url,
                        listening_line: line,
                    });
                }
                said.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().expect("the server's status");
                return Startup::Exited(status.code(), said.join("\n"));
            }
        }
    }
    let _ = child.kill();
    panic!(
        "pagoda-server neither listened nor exited in 120 s:\n{}",
        said.join("\n")
    );
}

impl Drop for EnvServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `url`: the status code and body.
pub fn http_get(url: &str) -> (u16, String) {
    request(reqwest::Client::new().get(url))
}

/// POST a JSON body to `url`: the status code and body.
pub fn http_post(url: &str, body: &Value) -> (u16, String) {
    request(reqwest::Client::new().post(url).json(body))
}

fn request(builder: reqwest::RequestBuilder) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let response = builder
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap_or_else(|e| panic!("request failed: {e}"));
        let status = response.status().as_u16();
        (status, response.text().await.expect("a body"))
    })
}
