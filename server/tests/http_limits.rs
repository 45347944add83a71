//! The HTTP limits of `pagoda-server` against clients that misbehave, over real sockets: half-open
//! connections and stalled bodies are closed within their timeouts while `/health` keeps
//! answering new connections, at the default connection limit and past a small one; declared
//! and streamed oversized bodies get their 413 (Python's `http.client` included); a stalled body
//! gets 408. The mock engine serves (`--mock`): only the HTTP layer is under test.

mod common;

use std::time::{Duration, Instant};

use common::server::ServerProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CHAT: &str = "/v1/chat/completions";

/// The server's `host:port`.
fn address(server: &ServerProcess) -> String {
    server
        .base_url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

/// Lets this test process hold a thousand sockets whatever `ulimit -n` says.
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let wanted = limit.maximum.unwrap_or(1 << 16).min(1 << 16);
    if limit.current.is_some_and(|c| c < wanted) {
        let raised = Rlimit {
            current: Some(wanted),
            maximum: limit.maximum,
        };
        setrlimit(Resource::Nofile, raised).expect("raise the open-files limit");
    }
}

/// Writes `request` on a new connection and returns the status line's code and the whole
/// answer, or why there is none within `timeout`.
async fn exchange(
    address: &str,
    request: &[u8],
    timeout: Duration,
) -> Result<(u16, String), String> {
    let work = async {
        let mut stream = TcpStream::connect(address)
            .await
            .map_err(|e| e.to_string())?;
        stream.write_all(request).await.map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&answer).into_owned();
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("no status line in {text:?}"))?;
        Ok((code, text))
    };
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
}

const HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";

/// Connections that each hold a misbehaving request open.
struct Attack {
    /// Sent half a request head, then nothing.
    half_heads: Vec<TcpStream>,
    /// Sent a whole head declaring a 1 MB body, then 2 bytes of it.
    stalled_bodies: Vec<TcpStream>,
}

async fn attack(address: &str, num_connections: usize) -> Attack {
    let mut attack = Attack {
        half_heads: Vec::new(),
        stalled_bodies: Vec::new(),
    };
    for i in 0..num_connections {
        let mut stream = TcpStream::connect(address).await.expect("connects");
        if i % 2 == 0 {
            let head = format!("POST {CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: appl");
            stream.write_all(head.as_bytes()).await.expect("sends");
            attack.half_heads.push(stream);
        } else {
            let head = format!(
                "POST {CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                 content-length: 1000000\r\n\r\n{{\""
            );
            stream.write_all(head.as_bytes()).await.expect("sends");
            attack.stalled_bodies.push(stream);
        }
    }
    attack
}

/// Polls `/health` from new connections for `duration`; every probe must answer 200 within 1 s.
async fn probe_health(address: &str, duration: Duration) -> usize {
    let until = Instant::now() + duration;
    let mut num_probes = 0;
    while Instant::now() < until {
        let started = Instant::now();
        let (code, text) = exchange(address, HEALTH, Duration::from_secs(1))
            .await
            .unwrap_or_else(|e| panic!("probe {num_probes}: {e}"));
        assert_eq!(code, 200, "probe {num_probes}: {text}");
        assert!(started.elapsed() < Duration::from_secs(1));
        num_probes += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    num_probes
}

/// How a held connection ended: what the server sent before closing it.
async fn ending(mut stream: TcpStream, within: Duration) -> Result<String, String> {
    let mut answer = Vec::new();
    match tokio::time::timeout(within, stream.read_to_end(&mut answer)).await {
        Err(_) => Err("still open".into()),
        // A reset after the server gave up counts as closed.
        Ok(_) => Ok(String::from_utf8_lossy(&answer).into_owned()),
    }
}

async fn attack_while_probing(extra_flags: &[&str]) {
    raise_open_files_limit();
    let mut args = vec![
        "--mock",
        "--http-header-read-timeout",
        "2",
        "--http-body-read-timeout",
        "3",
    ];
    args.extend_from_slice(extra_flags);
    let server = ServerProcess::start(&args);
    let address = address(&server);
    let started = Instant::now();
    let held = attack(&address, 1000).await;
    let num_probes = probe_health(&address, Duration::from_secs(2)).await;
    assert!(num_probes >= 5, "{num_probes} probes");

    // Every half head is closed by the header timeout (2 s, counted from each connection's
    // opening), every stalled body by the body timeout (3 s) with a 408 or, if the connection
    // had to make room for others, a close. Slack: 5 s for a loaded machine.
    let deadline = started + Duration::from_secs(3 + 5);
    for stream in held.half_heads {
        let left = deadline.saturating_duration_since(Instant::now());
        let answer = ending(stream, left).await.expect("a half head is closed");
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
            "{answer:?}"
        );
    }
    let mut num_408 = 0;
    for stream in held.stalled_bodies {
        let left = deadline.saturating_duration_since(Instant::now());
        let answer = ending(stream, left)
            .await
            .expect("a stalled body is closed");
        if answer.starts_with("HTTP/1.1 408") {
            assert!(answer.contains("http-body-read-timeout"), "{answer}");
            num_408 += 1;
        }
    }
    assert!(num_408 > 0, "no stalled body was answered 408");
    // And the server still serves.
    let (code, text) = exchange(&address, HEALTH, Duration::from_secs(1))
        .await
        .expect("health");
    assert_eq!(code, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_half_open_connections_are_closed_and_health_answers_throughout() {
    attack_while_probing(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn past_max_connections_health_still_answers() {
    attack_while_probing(&["--max-connections", "100"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_body_that_never_comes_gets_408_within_the_body_timeout() {
    let server = ServerProcess::start(&["--mock", "--http-body-read-timeout", "1"]);
    let request = format!(
        "POST {CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 100\r\n\r\n{{\"messages\":"
    );
    let started = Instant::now();
    let (code, text) = exchange(
        &address(&server),
        request.as_bytes(),
        Duration::from_secs(6),
    )
    .await
    .expect("answered");
    assert_eq!(code, 408, "{text}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "not before the timeout"
    );
    assert!(
        text.contains("\"type\":\"invalid_request_error\""),
        "{text}"
    );
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_gigabyte_gets_413_at_once() {
    // With a 30 s body timeout, an answer within 10 s cannot have waited for the body.
    let server = ServerProcess::start(&["--mock", "--http-body-read-timeout", "30"]);
    let request = format!(
        "POST {CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 1000000000\r\n\r\n"
    );
    let mut stream = TcpStream::connect(address(&server))
        .await
        .expect("connects");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut head = vec![0u8; 4096];
    let num_read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut head))
        .await
        .expect("answered at once")
        .expect("reads");
    let text = String::from_utf8_lossy(&head[..num_read]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("request_too_large"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_http_client_sending_20_mb_reads_its_413() {
    let server = ServerProcess::start(&["--mock"]);
    let (host, port) = address(&server)
        .rsplit_once(':')
        .map(|(h, p)| (h.to_string(), p.to_string()))
        .expect("host:port");
    let script = r#"
import http.client, sys
host, port = sys.argv[1], int(sys.argv[2])
for attempt in range(5):
    connection = http.client.HTTPConnection(host, port, timeout=60)
    connection.request("POST", "/v1/chat/completions", body=b" " * 20_000_000,
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    print(attempt, response.status, response.read().decode())
    connection.close()
"#;
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args(["-c", script, &host, &port])
            .output()
            .expect("python3 runs")
    })
    .await
    .expect("joins");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    for line in lines {
        assert!(
            line.contains(" 413 ") && line.contains("request_too_large"),
            "{line}"
        );
    }
}
