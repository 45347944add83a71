//! `https://` servers, against a server on 127.0.0.1 with a self-signed certificate: refused
//! unless `--insecure` (vLLM's) accepts it, for the probes and the benchmark's requests alike.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::time::timeout;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::client::test_http::read_request;
use crate::client::{
    discover_model, readiness_check, Client, ClientError, Endpoint, RequestConfig, RunClock,
    ServerAccess,
};
use crate::workload::RequestSpec;

const BOUND: Duration = Duration::from_secs(10);

const MODELS: &str = r#"{"object":"list","data":[{"id":"tls-model","object":"model"}]}"#;
const STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"text\":\"hi\",\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1,\"total_tokens\":3}}\n\n",
    "data: [DONE]\n\n",
);

/// An HTTPS server with a fresh self-signed certificate for 127.0.0.1: `GET` gets the model
/// list, `POST` a completion stream; one request per connection. Its base URL.
async fn serve_tls() -> String {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).expect("a certificate");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .expect("a TLS configuration");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let base_url = format!("https://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(timeout(BOUND, async move {
                // A client that refuses the certificate ends the handshake: nothing to answer.
                let Ok(mut stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = [0u8; 4];
                let Ok(_) = tokio::io::AsyncReadExt::read_exact(&mut stream, &mut head).await
                else {
                    return;
                };
                let is_get = &head[..3] == b"GET";
                if read_request(&mut stream).await.is_none() {
                    return;
                }
                let (kind, body) = match is_get {
                    true => ("application/json", MODELS),
                    false => ("text/event-stream", STREAM),
                };
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            }));
        }
    });
    base_url
}

fn access(insecure: bool) -> ServerAccess {
    ServerAccess {
        insecure,
        ..ServerAccess::default()
    }
}

#[tokio::test]
async fn a_self_signed_server_is_refused_unless_insecure() {
    let base_url = serve_tls().await;
    let refused = discover_model(&base_url, &access(false)).await;
    let Err(ClientError::BadResponse { message, .. }) = refused else {
        panic!("a self-signed certificate must be refused: {refused:?}");
    };
    assert!(message.to_lowercase().contains("certificate"), "{message}");
    let not_ready = readiness_check(&base_url, &access(false), Duration::from_millis(300)).await;
    assert!(
        matches!(not_ready, Err(ClientError::NotReady { .. })),
        "{not_ready:?}"
    );

    readiness_check(&base_url, &access(true), BOUND)
        .await
        .expect("ready over TLS");
    let model = discover_model(&base_url, &access(true))
        .await
        .expect("a model");
    assert_eq!(model, "tls-model");
}

#[tokio::test]
async fn a_benchmark_request_streams_over_tls() {
    let base_url = serve_tls().await;
    let spec = RequestSpec::text("hello", 1, 1);
    for insecure in [false, true] {
        let mut config = RequestConfig::new(Endpoint::Completions, &base_url, "m");
        config.timeout = BOUND;
        config.access = access(insecure);
        let client = Client::new(config).expect("a client");
        let clock = RunClock {
            start: std::time::Instant::now(),
        };
        let record = timeout(BOUND, client.send(0, &spec, 0.0, clock, None))
            .await
            .expect("the request ends");
        if insecure {
            assert_eq!(record.error_message, None);
            assert_eq!(record.output_tokens, 1);
        } else {
            let message = record.error_message.expect("refused");
            assert!(message.to_lowercase().contains("certificate"), "{message}");
        }
    }
}
