//! Runs the real `pagoda-server` binary on a free port and talks to it over HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running server; killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    pub base_url: String,
    /// Every stderr line so far arrives here (after the listening line).
    pub log_lines: mpsc::Receiver<String>,
}

/// How long a server may take to load its model and listen.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

impl ServerProcess {
    /// Starts `pagoda-server --port 0 --host 127.0.0.1 <args>` and waits until it listens.
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(crate::binaries::binary_path("pagoda-server"))
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pagoda-server starts");
        let log_lines = forward_stderr(&mut child, "server");
        let base_url = wait_for_address(&log_lines, &mut child);
        Self {
            child,
            base_url,
            log_lines,
        }
    }

    /// Builds the binaries, then starts `pagoda-server --mock` with this TTFT and TPOT
    /// (milliseconds), request logs off.
    pub fn start_mock(ttft_ms: &str, tpot_ms: &str) -> Self {
        crate::binaries::ensure_built();
        let timings = ["--mock-ttft-ms", ttft_ms, "--mock-tpot-ms", tpot_ms];
        Self::start(&[&["--mock"], &timings[..], &["--disable-log-requests"]].concat())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the process to exit; returns its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Every log line received so far.
    pub fn drain_logs(&self) -> Vec<String> {
        self.log_lines.try_iter().collect()
    }

    /// Waits for a log line containing `needle` and returns it (consuming the lines before it);
    /// `None` after `timeout`. Blocks the calling thread.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.log_lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Some(line),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }
}

/// Echoes every stderr line of `child` to the test log (prefixed) and sends it to the returned
/// receiver. Reads to the end even when nobody listens: a closed pipe would make the server's
/// next log line fail.
pub fn forward_stderr(child: &mut Child, prefix: &str) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("stderr is piped");
    let (lines_tx, lines) = mpsc::channel();
    let prefix = prefix.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[{prefix}] {line}");
            let _ = lines_tx.send(line);
        }
    });
    lines
}

/// The base URL of a server's "listening on http://ADDRESS" (or `https://`) log line, text or
/// JSON logs (`0.0.0.0` becomes `127.0.0.1`, an address a client can use).
pub fn listening_url(line: &str) -> Option<String> {
    let rest = line.split("listening on ").nth(1)?;
    let (scheme, rest) = rest.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    // Ends at whitespace (text logs) or at the closing quote (JSON logs).
    let address = rest.split(|c: char| c.is_whitespace() || c == '"').next()?;
    Some(format!(
        "{scheme}://{}",
        address.replace("0.0.0.0", "127.0.0.1")
    ))
}

fn wait_for_address(lines: &mpsc::Receiver<String>, child: &mut Child) -> String {
    let deadline = std::time::Instant::now() + STARTUP_TIMEOUT;
    // What the server said while starting, for the failure message.
    let mut said = Vec::new();
    while std::time::Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                if let Some(url) = listening_url(&line) {
                    return url;
                }
                said.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "pagoda-server exited during startup: {status}; it said:\n{}",
                        said.join("\n")
                    );
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                panic!(
                    "pagoda-server closed stderr ({status}); it said:\n{}",
                    said.join("\n")
                )
            }
        }
    }
    panic!("pagoda-server did not listen within {STARTUP_TIMEOUT:?}");
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `pagoda-server --mock --host 127.0.0.1 --port 0 <args>`, which must refuse to start;
/// its stderr (the reason).
pub fn mock_start_failure(args: &[&str]) -> String {
    let output = Command::new(crate::binaries::binary_path("pagoda-server"))
        .args(["--mock", "--host", "127.0.0.1", "--port", "0"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("pagoda-server runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{args:?} started: {stderr}");
    stderr
}

/// Sends SIGTERM (the way Kubernetes stops a pod).
pub fn send_sigterm(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Splits an SSE body into its `data:` payloads.
pub fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|event| {
            event
                .lines()
                .find_map(|line| line.strip_prefix("data: ").map(str::to_string))
        })
        .collect()
}
