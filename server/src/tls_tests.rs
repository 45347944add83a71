//! The flags against certificates made here: what serves, and what stops the start with the
//! reason.

use rcgen::{CertificateParams, CertifiedIssuer, IsCa, KeyPair};

use super::*;

/// A self-signed server certificate for 127.0.0.1 and its key, as PEM files in `dir`.
fn write_server_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    pagoda_e2e::tls::write_self_signed(dir, name)
}

fn write_ca(dir: &Path) -> PathBuf {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca =
        CertifiedIssuer::self_signed(params, KeyPair::generate().expect("a key")).expect("a CA");
    let path = dir.join("ca.crt");
    std::fs::write(&path, ca.pem()).expect("writes");
    path
}

fn args(cert: Option<&Path>, key: Option<&Path>, ca: Option<&Path>, reqs: u8) -> TlsArgs {
    TlsArgs {
        ssl_certfile: cert.map(Path::to_path_buf),
        ssl_keyfile: key.map(Path::to_path_buf),
        ssl_ca_certs: ca.map(Path::to_path_buf),
        ssl_cert_reqs: reqs,
        enable_ssl_refresh: false,
        ssl_refresh_interval: 10.0,
    }
}

fn refusal(args: &TlsArgs) -> String {
    match args.acceptor() {
        Ok(_) => panic!("{args:?} was accepted"),
        Err(error) => format!("{error:#}"),
    }
}

#[test]
fn a_certificate_and_its_key_serve_https_and_nothing_else_is_plain_http() {
    let dir = tempfile::tempdir().expect("a directory");
    let (cert, key) = write_server_pair(dir.path(), "server");
    assert!(args(None, None, None, 0)
        .acceptor()
        .expect("plain")
        .is_none());
    assert!(args(Some(&cert), Some(&key), None, 0)
        .acceptor()
        .expect("https")
        .is_some());
    let ca = write_ca(dir.path());
    for reqs in [1, 2] {
        assert!(args(Some(&cert), Some(&key), Some(&ca), reqs)
            .acceptor()
            .expect("mutual TLS")
            .is_some());
    }
}

#[test]
fn broken_files_and_contradicting_flags_stop_the_start_with_the_reason() {
    let dir = tempfile::tempdir().expect("a directory");
    let (cert, _) = write_server_pair(dir.path(), "one");
    let (_, other_key) = write_server_pair(dir.path(), "two");
    let mismatched = refusal(&args(Some(&cert), Some(&other_key), None, 0));
    assert!(mismatched.contains("usable pair"), "{mismatched}");

    let missing = dir.path().join("missing.pem");
    let no_cert = refusal(&args(Some(&missing), Some(&other_key), None, 0));
    assert!(
        no_cert.contains("--ssl-certfile") && no_cert.contains("missing.pem"),
        "{no_cert}"
    );
    let not_pem = dir.path().join("empty.pem");
    std::fs::write(&not_pem, "not a certificate\n").expect("writes");
    let empty = refusal(&args(Some(&not_pem), Some(&other_key), None, 0));
    assert!(empty.contains("no certificate"), "{empty}");
    let no_key = refusal(&args(Some(&cert), Some(&cert), None, 0));
    assert!(no_key.contains("--ssl-keyfile"), "{no_key}");

    let (cert, key) = write_server_pair(dir.path(), "three");
    let no_ca = refusal(&args(Some(&cert), Some(&key), None, 2));
    assert!(no_ca.contains("--ssl-ca-certs"), "{no_ca}");
    let no_server_cert = refusal(&args(None, None, None, 1));
    assert!(
        no_server_cert.contains("--ssl-certfile"),
        "{no_server_cert}"
    );
}
