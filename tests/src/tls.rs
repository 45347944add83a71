//! Certificates for HTTPS runs of `pagoda-server` (`--ssl-certfile`, `--ssl-keyfile`).

use std::path::{Path, PathBuf};

/// A fresh self-signed certificate for 127.0.0.1 and its key, written as PEM files
/// `{name}.crt` and `{name}.key` in `dir`: (certificate, key).
pub fn write_self_signed(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).expect("a certificate");
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, certified.cert.pem()).expect("writes the certificate");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("writes the key");
    (cert, key)
}
