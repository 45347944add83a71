//! Runs the real binaries the way a deployment file declares them: exactly its environment (a
//! clean one, as systemd and a container give, plus PATH) and its arguments, with only container
//! or install paths and ports remapped to this machine.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pagoda_e2e::binaries::{binary_path, env_vars_in_help};
use pagoda_e2e::server::{forward_stderr, listening_url};
pub use pagoda_e2e::tools::default_model;

pub type Env = BTreeMap<String, String>;

/// What a real model may take to load.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// Every `PAGODA_*` variable the binaries read: the names their `--help` documents.
pub fn known_variables() -> BTreeSet<String> {
    let mut names = env_vars_in_help("pagoda-server", &["--help"]);
    names.extend(env_vars_in_help("pagoda-bench", &["serve", "--help"]));
    assert!(
        names.contains("PAGODA_PORT"),
        "no PAGODA_* in --help: {names:?}"
    );
    names
}

/// Fails when `env` sets a `PAGODA_*` variable no binary reads (a renamed or misspelled flag).
pub fn assert_known_variables(origin: &str, env: &Env) {
    let known = known_variables();
    let unknown: Vec<&String> = env
        .keys()
        .filter(|name| name.starts_with("PAGODA_") && !known.contains(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "{origin} sets variables no binary reads: {unknown:?}"
    );
}

/// A running `pagoda-server`; killed when dropped.
#[derive(Debug)]
pub struct Launched {
    child: Child,
    /// `http://127.0.0.1:<port>`, from the server's "listening on" log line.
    pub base_url: String,
    pub port: u16,
}

impl Launched {
    /// Starts `wrapper… pagoda-server args…` with exactly `env` (plus PATH) and waits until the
    /// server listens. `wrapper` is empty, or a tracer such as `strace -f -o FILE`.
    pub fn start(wrapper: &[String], args: &[String], env: &Env) -> Self {
        let server = binary_path("pagoda-server");
        let mut command = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut command = Command::new(program);
                command.args(rest).arg(&server);
                command
            }
            None => Command::new(&server),
        };
        let mut child = command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pagoda-server starts");
        let base_url = wait_for_listening(&mut child);
        let port = base_url
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("the address has a port");
        Self {
            child,
            base_url,
            port,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends SIGTERM to the server (the wrapper's child when there is a wrapper) and waits for
    /// the launched process to exit.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let own = self.child.id();
        let children =
            std::fs::read_to_string(format!("/proc/{own}/task/{own}/children")).unwrap_or_default();
        let server = children.split_whitespace().next().map(str::to_string);
        let target = server.unwrap_or_else(|| own.to_string());
        let status = Command::new("kill")
            .args(["-TERM", &target])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {target} failed");
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("pagoda-server did not exit within {timeout:?} of SIGTERM");
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads stderr until the "listening on http://ADDRESS" line (text or JSON logs), echoing it.
fn wait_for_listening(child: &mut Child) -> String {
    let lines = forward_stderr(child, "launched");
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                if let Some(url) = listening_url(&line) {
                    return url;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("pagoda-server exited during startup: {:?}", child.wait())
            }
        }
    }
    panic!("pagoda-server did not listen within {STARTUP_TIMEOUT:?}");
}

/// `text` with every `from` replaced by its `to` in one pass, longest `from` first (container
/// and install paths to this machine's, a service's address to the running server's).
pub fn remap(text: &str, pairs: &[(String, String)]) -> String {
    let mut pairs: Vec<&(String, String)> = pairs.iter().collect();
    pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match pairs
            .iter()
            .find(|(from, _)| rest.starts_with(from.as_str()))
        {
            Some((from, to)) => {
                out.push_str(to);
                rest = &rest[from.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// `GET url` → (status, body).
pub fn get(url: &str) -> (u16, String) {
    request(url, None)
}

/// `POST url` with a JSON body → (status, body).
pub fn post_json(url: &str, body: serde_json::Value) -> (u16, String) {
    request(url, Some(body))
}

fn request(url: &str, body: Option<serde_json::Value>) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let request = match body {
            Some(body) => client.post(url).json(&body),
            None => client.get(url),
        };
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status().as_u16();
        (status, response.text().await.expect("a body"))
    })
}

/// Runs `argv` (a health-check command) with `env` added; true when it exits 0.
pub fn command_succeeds(argv: &[String], env: &Env) -> bool {
    let (program, args) = argv.split_first().expect("a command");
    let output = Command::new(program)
        .args(args)
        .envs(env)
        .output()
        .unwrap_or_else(|e| panic!("{argv:?} does not run: {e}"));
    eprintln!(
        "[{argv:?}] {} {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.status.success()
}
