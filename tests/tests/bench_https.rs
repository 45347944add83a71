//! pagoda-bench against `pagoda-server` serving HTTPS (`--ssl-certfile`, a self-signed
//! certificate made here): refused without `--insecure` (the certificate is not trusted), and
//! with it the whole run goes over TLS — readiness check, discovery, the requests and the
//! `--scrape-metrics` sampling of the server's `/metrics`.

use pagoda_e2e::bench::{number, read_json, run_bench, serve_against_mock};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tls::write_self_signed;

#[test]
fn a_run_against_an_https_server_needs_insecure_for_a_self_signed_certificate() {
    ensure_built();
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key) = write_self_signed(dir.path(), "server");
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "5",
        "--mock-tpot-ms",
        "1",
        "--disable-log-requests",
        "--ssl-certfile",
        cert.to_str().expect("utf-8"),
        "--ssl-keyfile",
        key.to_str().expect("utf-8"),
    ]);
    assert!(
        server.base_url.starts_with("https://"),
        "{}",
        server.base_url
    );
    let out = dir.path().display().to_string();
    let args = |insecure: bool| {
        let mut args = serve_against_mock(&server.base_url);
        args.extend(
            [
                "--random-input-len",
                "16",
                "--random-output-len",
                "4",
                "--num-prompts",
                "6",
                "--max-concurrency",
                "2",
                "--ignore-eos",
                "--ready-check-timeout-sec",
                "5",
                "--scrape-metrics",
                &server.base_url,
                "--scrape-interval",
                "0.1",
                "--save-result",
                "--result-dir",
                &out,
                "--result-filename",
                "https.json",
            ]
            .map(String::from),
        );
        if insecure {
            args.push("--insecure".into());
        }
        args
    };
    let run = |insecure: bool| {
        let args = args(insecure);
        run_bench(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let refused = run(false);
    assert!(
        !refused.status.success(),
        "an untrusted certificate was accepted"
    );
    let said = String::from_utf8_lossy(&refused.stderr).to_lowercase();
    assert!(said.contains("certificate"), "{said}");

    let accepted = run(true);
    assert!(accepted.status.success(), "the run with --insecure failed");
    let result = read_json(&dir.path().join("https.json"));
    assert_eq!(number(&result, "completed"), 6.0, "{result}");
    assert_eq!(number(&result, "failed"), 0.0);
    assert_eq!(number(&result, "total_output_tokens"), 24.0);
    let side = &result["pagoda"]["server_side"];
    assert!(
        side["metrics_url"]
            .as_str()
            .is_some_and(|url| url.starts_with("https://")),
        "{side}"
    );
    assert!(
        side["timeline"].as_array().is_some_and(|t| !t.is_empty()),
        "{side}"
    );
}
