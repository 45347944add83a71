//! HTTPS, vLLM's flags: `--ssl-certfile` and `--ssl-keyfile` (PEM) serve every connection over
//! TLS (rustls: TLS 1.2 and 1.3, HTTP/1.1 by ALPN); `--ssl-ca-certs` with `--ssl-cert-reqs 1|2`
//! asks clients for a certificate signed by those CAs (optional / required: mutual TLS), as
//! Python's `ssl.CERT_OPTIONAL` / `CERT_REQUIRED` that vLLM passes to uvicorn. Everything is read
//! and checked at start: a missing file, a key that does not match its certificate or a
//! malformed PEM stops the server with the reason. With `--enable-ssl-refresh` the files are
//! watched (`--ssl-refresh-interval`) and read again when they change, so a rotated certificate
//! (cert-manager, certbot) serves new connections without a restart.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use clap::Args;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// The server's private key (PEM: PKCS#8, PKCS#1 or SEC1); with --ssl-certfile, serve HTTPS.
    #[arg(
        long,
        env = "PAGODA_SSL_KEYFILE",
        value_name = "PATH",
        requires = "ssl_certfile"
    )]
    pub ssl_keyfile: Option<PathBuf>,
    /// The server's certificate chain (PEM, leaf first); with --ssl-keyfile, serve HTTPS.
    #[arg(
        long,
        env = "PAGODA_SSL_CERTFILE",
        value_name = "PATH",
        requires = "ssl_keyfile"
    )]
    pub ssl_certfile: Option<PathBuf>,
    /// CA certificates (PEM) that client certificates must be signed by (with --ssl-cert-reqs).
    #[arg(
        long,
        env = "PAGODA_SSL_CA_CERTS",
        value_name = "PATH",
        requires = "ssl_certfile"
    )]
    pub ssl_ca_certs: Option<PathBuf>,
    /// Client certificates: 0 not asked for, 1 optional, 2 required (Python's ssl.CERT_*
    /// numbers, as vLLM takes them). 1 and 2 need --ssl-ca-certs.
    #[arg(long, env = "PAGODA_SSL_CERT_REQS", value_name = "0|1|2", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub ssl_cert_reqs: u8,
    /// vLLM's: read the certificate, key and CA files again when they change; new connections
    /// get the new ones (a file that does not load keeps the previous ones, with a warning).
    #[arg(long, env = "PAGODA_ENABLE_SSL_REFRESH", requires = "ssl_certfile")]
    pub enable_ssl_refresh: bool,
    /// With --enable-ssl-refresh: seconds between looks at the files.
    #[arg(
        long,
        env = "PAGODA_SSL_REFRESH_INTERVAL",
        value_name = "SECONDS",
        default_value_t = 10.0
    )]
    pub ssl_refresh_interval: f64,
}

impl TlsArgs {
    /// The TLS acceptor these flags describe; `None` without a certificate (plain HTTP).
    pub fn acceptor(&self) -> anyhow::Result<Option<TlsAcceptor>> {
        let (Some(cert_path), Some(key_path)) = (&self.ssl_certfile, &self.ssl_keyfile) else {
            if self.ssl_cert_reqs > 0 {
                bail!("--ssl-cert-reqs needs --ssl-certfile and --ssl-keyfile");
            }
            return Ok(None);
        };
        let chain = read_certificates(cert_path, "--ssl-certfile")?;
        let key = PrivateKeyDer::from_pem_file(key_path).with_context(|| {
            format!(
                "--ssl-keyfile {}: no private key in PEM form",
                key_path.display()
            )
        })?;
        // ring, named: with more than one provider in a build, `builder()` cannot choose.
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS: the crypto provider supports no protocol version")?;
        let builder = match (self.ssl_cert_reqs, &self.ssl_ca_certs) {
            (0, _) => builder.with_no_client_auth(),
            (_, None) => bail!(
                "--ssl-cert-reqs {} needs --ssl-ca-certs",
                self.ssl_cert_reqs
            ),
            (reqs, Some(ca_path)) => {
                let mut roots = RootCertStore::empty();
                for ca in read_certificates(ca_path, "--ssl-ca-certs")? {
                    roots.add(ca).with_context(|| {
                        format!("--ssl-ca-certs {}: not a CA certificate", ca_path.display())
                    })?;
                }
                let verifier = WebPkiClientVerifier::builder(Arc::new(roots));
                let verifier = match reqs {
                    1 => verifier.allow_unauthenticated().build(),
                    _ => verifier.build(),
                }
                .context("--ssl-ca-certs: cannot verify clients with these certificates")?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .context("--ssl-certfile and --ssl-keyfile do not make a usable pair")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Some(TlsAcceptor::from(Arc::new(config))))
    }
}

/// The acceptor new connections take; replaced when `--enable-ssl-refresh` reloads the files.
#[derive(Clone)]
pub struct TlsAcceptorCell(Arc<RwLock<TlsAcceptor>>);

impl TlsAcceptorCell {
    pub fn new(acceptor: TlsAcceptor) -> Self {
        Self(Arc::new(RwLock::new(acceptor)))
    }

    /// The acceptor for a new connection.
    pub fn current(&self) -> TlsAcceptor {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn replace(&self, acceptor: TlsAcceptor) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = acceptor;
    }
}

impl std::fmt::Debug for TlsAcceptorCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsAcceptorCell")
    }
}

/// What the files looked like: each one's modification time and length (`None`: unreadable).
fn file_stamps(args: &TlsArgs) -> Vec<Option<(SystemTime, u64)>> {
    [&args.ssl_certfile, &args.ssl_keyfile, &args.ssl_ca_certs]
        .into_iter()
        .flatten()
        .map(|path| {
            let metadata = std::fs::metadata(path).ok()?;
            Some((metadata.modified().ok()?, metadata.len()))
        })
        .collect()
}

/// `--enable-ssl-refresh`: every `--ssl-refresh-interval`, reads the files again when they
/// changed and gives `cell` the new acceptor; files that do not load keep the old one.
pub fn spawn_refresh(args: TlsArgs, cell: TlsAcceptorCell) -> tokio::task::JoinHandle<()> {
    let every = Duration::from_secs_f64(args.ssl_refresh_interval.clamp(0.05, 86_400.0));
    tokio::spawn(async move {
        let mut seen = file_stamps(&args);
        loop {
            tokio::time::sleep(every).await;
            let now = file_stamps(&args);
            if now == seen {
                continue;
            }
            seen = now;
            match args.acceptor() {
                Ok(Some(acceptor)) => {
                    cell.replace(acceptor);
                    tracing::info!("TLS certificates reloaded (--enable-ssl-refresh)");
                }
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(
                        "TLS files changed but do not load; keeping the previous ones: {error:#}"
                    )
                }
            }
        }
    })
}

/// Every certificate of a PEM file; at least one.
fn read_certificates(path: &Path, flag: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|found| found.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("{flag} {}: cannot read certificates", path.display()))?;
    if certificates.is_empty() {
        bail!("{flag} {}: no certificate in PEM form", path.display());
    }
    Ok(certificates)
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
