//! Tests only: runs the real `pagoda-server` binary (mock engine) on a free port.
//!
//! The binary is `$PAGODA_SERVER_BIN`, else `pagoda-server` in this test's target directory
//! (`target/debug/`), built with `cargo build -p pagoda-server --bin pagoda-server` when absent.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Held by every test that starts a server or measures timing, so that those run one at a time.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A running server; killed when dropped.
#[derive(Debug)]
pub struct TestServer {
    child: Child,
    pub base_url: String,
}

impl TestServer {
    /// `pagoda-server --mock --host 127.0.0.1 --port 0 --disable-log-requests <args>`.
    pub fn start_mock(args: &[&str]) -> Self {
        let mut child = Command::new(server_binary())
            .args(["--mock", "--host", "127.0.0.1", "--port", "0"])
            .arg("--disable-log-requests")
            .args(args)
            .env("RUST_LOG", "warn,pagoda_server::app=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pagoda-server starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (lines_tx, lines) = mpsc::channel();
        // Keeps draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            match lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let address = rest.split_whitespace().next().expect("an address");
                        return Self {
                            child,
                            base_url: format!("http://{address}"),
                        };
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("pagoda-server did not start listening");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(find_or_build).clone()
}

fn find_or_build() -> PathBuf {
    if let Some(path) = std::env::var_os("PAGODA_SERVER_BIN") {
        return PathBuf::from(path);
    }
    // This test binary is `target/<profile>/deps/pagoda_bench-…`.
    let exe = std::env::current_exe().expect("the test's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let binary = profile_dir.join("pagoda-server");
    if !binary.exists() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-p", "pagoda-server", "--bin", "pagoda-server"]);
        if profile_dir
            .file_name()
            .is_some_and(|name| name == "release")
        {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building pagoda-server failed");
    }
    binary
}
