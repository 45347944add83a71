//! HTTPS (vLLM's `--ssl-keyfile`, `--ssl-certfile`, `--ssl-ca-certs`, `--ssl-cert-reqs`) against
//! the real binary on the mock engine, with certificates made here: a client that trusts the
//! server's certificate is served (chat, a stream, `/health`), plain HTTP to the port gets
//! nothing, and with `--ssl-cert-reqs 2` only a client with a certificate from the given CA is.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::server::{mock_start_failure, sse_data, ServerProcess};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(20);

/// A self-signed server certificate for 127.0.0.1, as PEM files: (certificate, key).
fn server_pair(dir: &Path) -> (PathBuf, PathBuf) {
    pagoda_e2e::tls::write_self_signed(dir, "server")
}

/// A CA (its certificate written to `ca.crt`) and a client identity it signed (PEM: certificate
/// then key, as reqwest reads one).
fn client_ca_and_identity(dir: &Path) -> (PathBuf, Vec<u8>) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("a key")).expect("a CA");
    let ca_path = dir.join("ca.crt");
    std::fs::write(&ca_path, ca.pem()).expect("writes");
    let mut client_params = CertificateParams::new(vec!["client".to_string()]).expect("params");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate().expect("a key");
    let client = client_params
        .signed_by(&client_key, &ca)
        .expect("a client certificate");
    let identity = format!("{}{}", client.pem(), client_key.serialize_pem());
    (ca_path, identity.into_bytes())
}

fn https_client(server_cert: &Path, identity: Option<&[u8]>) -> reqwest::Client {
    let pem = std::fs::read(server_cert).expect("reads");
    let root = reqwest::Certificate::from_pem(&pem).expect("a certificate");
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(root)
        .timeout(BOUND);
    if let Some(identity) = identity {
        builder = builder.identity(reqwest::Identity::from_pem(identity).expect("an identity"));
    }
    builder.build().expect("a client")
}

/// The mock server on HTTPS with this certificate and key, and more flags.
fn start_https(cert: &Path, key: &Path, flags: &[&str]) -> ServerProcess {
    let (cert, key) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let base = ["--mock", "--ssl-certfile", cert, "--ssl-keyfile", key];
    ServerProcess::start(&[&base[..], flags].concat())
}

/// A three-token chat request over `client`.
async fn post_chat(
    client: &reqwest::Client,
    server: &ServerProcess,
    stream: bool,
) -> reqwest::Result<reqwest::Response> {
    let body = json!({"model": "mock", "max_tokens": 3, "stream": stream,
                      "messages": [{"role": "user", "content": "hi"}]});
    client
        .post(server.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
}

#[tokio::test]
async fn https_serves_clients_that_trust_the_certificate() {
    let dir = tempfile::tempdir().expect("a directory");
    let (cert, key) = server_pair(dir.path());
    let server = start_https(&cert, &key, &[]);
    let base = server.url("");
    assert!(base.starts_with("https://"), "{base}");
    let client = https_client(&cert, None);
    let reply = post_chat(&client, &server, false)
        .await
        .expect("an HTTPS answer");
    assert_eq!(reply.status().as_u16(), 200);
    let body: serde_json::Value = reply.json().await.expect("JSON");
    assert_eq!(body["usage"]["completion_tokens"], 3, "{body}");
    let streamed = post_chat(&client, &server, true)
        .await
        .expect("a stream")
        .text()
        .await
        .expect("the whole stream");
    assert_eq!(
        sse_data(&streamed).last().map(String::as_str),
        Some("[DONE]")
    );
    let health = client
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status().as_u16(), 200);

    // A client that does not trust the certificate, and plain HTTP, get nothing.
    let untrusting = reqwest::Client::builder()
        .use_rustls_tls()
        .timeout(BOUND)
        .build()
        .expect("a client");
    assert!(untrusting.get(server.url("/health")).send().await.is_err());
    let plain = base.replacen("https://", "http://", 1) + "/health";
    let answer = reqwest::Client::new()
        .get(plain)
        .timeout(BOUND)
        .send()
        .await;
    assert!(answer.is_err(), "plain HTTP was answered: {answer:?}");
    // The server still serves after both.
    let again = client
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(again.status().as_u16(), 200);
}

#[tokio::test]
async fn required_client_certificates_admit_only_clients_the_ca_signed() {
    let dir = tempfile::tempdir().expect("a directory");
    let (cert, key) = server_pair(dir.path());
    let (ca, identity) = client_ca_and_identity(dir.path());
    let ca = ca.to_str().expect("utf-8");
    let server = start_https(&cert, &key, &["--ssl-ca-certs", ca, "--ssl-cert-reqs", "2"]);
    let with_identity = https_client(&cert, Some(&identity));
    let reply = post_chat(&with_identity, &server, false)
        .await
        .expect("an answer to a client with a certificate");
    assert_eq!(reply.status().as_u16(), 200);
    let without = https_client(&cert, None);
    let refused = without.get(server.url("/health")).send().await;
    assert!(
        refused.is_err(),
        "served without a client certificate: {refused:?}"
    );
}

#[test]
fn unusable_tls_files_stop_the_server_at_start_with_the_reason() {
    let dir = tempfile::tempdir().expect("a directory");
    let (cert, _) = server_pair(dir.path());
    let missing = dir.path().join("missing.key");
    let said = mock_start_failure(&[
        "--ssl-certfile",
        cert.to_str().expect("utf-8"),
        "--ssl-keyfile",
        missing.to_str().expect("utf-8"),
    ]);
    assert!(said.contains("--ssl-keyfile"), "{said}");
    let said = mock_start_failure(&["--ssl-certfile", cert.to_str().expect("utf-8")]);
    assert!(said.contains("--ssl-keyfile"), "{said}");
}

/// `--enable-ssl-refresh`: a certificate rotated in place serves new connections without a
/// restart; a client that only trusts the old one is refused from then on.
#[tokio::test]
async fn a_rotated_certificate_is_picked_up_with_ssl_refresh() {
    let dir = tempfile::tempdir().expect("a directory");
    let (cert, key) = server_pair(dir.path());
    let old_cert = dir.path().join("old.crt");
    std::fs::copy(&cert, &old_cert).expect("copies");
    let server = start_https(
        &cert,
        &key,
        &["--enable-ssl-refresh", "--ssl-refresh-interval", "0.1"],
    );
    let health = |trusted: &Path| {
        let client = https_client(trusted, None);
        let url = server.url("/health");
        async move { client.get(url).send().await.is_ok() }
    };
    assert!(health(&old_cert).await, "the first certificate serves");

    let rotated = tempfile::tempdir().expect("a directory");
    let (new_cert, new_key) = server_pair(rotated.path());
    std::fs::copy(&new_key, &key).expect("replaces the key");
    std::fs::copy(&new_cert, &cert).expect("replaces the certificate");
    let deadline = std::time::Instant::now() + BOUND;
    while !health(&new_cert).await {
        assert!(
            std::time::Instant::now() < deadline,
            "the rotated certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!health(&old_cert).await, "the old certificate still serves");
    // A file that does not load keeps the certificate in use.
    std::fs::write(&cert, "not a certificate\n").expect("writes");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        health(&new_cert).await,
        "a broken file took the certificate away"
    );
}
