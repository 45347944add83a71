//! The HTTP listener: accepts connections, serves each with hyper under the limits of
//! [`HttpLimits`], and shuts down gracefully.
//!
//! One client must not be able to take the server offline: a connection that sends half a request
//! head is closed after `--http-header-read-timeout`, an idle keep-alive connection after
//! `--http-keep-alive-timeout` (body reads are bounded by the handlers, see
//! `openai::json_body`). At `--max-connections` a new connection takes the place of the longest
//! idle one; when all are busy, a few probe connections still answer `/health` and `/metrics`,
//! and past those a new connection gets a 503 and is closed — the listener itself never stops.
//! When accepting fails for lack of file descriptors the loop backs off and closes an idle
//! connection. With `--ssl-certfile` every connection is TLS (its handshake bounded by the
//! header timeout).

mod accept;
pub mod clock;
mod registry;
mod service;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::http_limits::HttpLimits;
use crate::tls::TlsAcceptorCell;

use accept::AcceptBackoff;
use clock::{ClockedIo, ConnectionClock, Expiry};
use registry::{Admission, ConnectionRegistry, ConnectionTicket};
use service::{at_connection_limit, ConnectionService};

/// The header timeout of a probe connection (when shorter than `--http-header-read-timeout`).
const PROBE_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// How connections are served besides the router.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    pub limits: HttpLimits,
    /// `--root-path`: a prefix taken off the request paths that carry it.
    pub root_path: Option<Arc<str>>,
    /// HTTPS (`--ssl-certfile`): every connection's TLS handshake, within the header timeout.
    pub tls: Option<TlsAcceptorCell>,
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and waits for every
/// open connection to finish its requests (idle ones are closed at once).
pub async fn serve_http(
    listener: TcpListener,
    app: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) {
    let limits = options.limits;
    let registry = ConnectionRegistry::new(limits.max_connections);
    let (stop_tx, stop_rx) = watch::channel(false);
    let (open_tx, mut open_rx) = mpsc::channel::<()>(1);
    let mut backoff = AcceptBackoff::default();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => {
                backoff.reset();
                stream
            }
            Err(error) => {
                let Some(delay) = backoff.on_error(&error) else {
                    continue;
                };
                registry.evict_one();
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(delay) => continue,
                }
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            // Streamed tokens are small writes: without TCP_NODELAY, Nagle's algorithm holds
            // them back until the client's delayed ACK (up to 40 ms).
            tracing::warn!(%error, "cannot set TCP_NODELAY");
        }
        let connection = Connection {
            app: app.clone(),
            limits,
            root_path: options.root_path.clone(),
            tls: options.tls.clone(),
            stop: stop_rx.clone(),
            _open: open_tx.clone(),
        };
        match registry.admit(Instant::now()) {
            Admission::Full(ticket) => tokio::spawn(connection.serve(stream, ticket, false)),
            Admission::ProbeOnly(ticket) => tokio::spawn(connection.serve(stream, ticket, true)),
            // Over TLS a plain-text 503 would be noise to the client: close at once.
            Admission::Refused if options.tls.is_some() => continue,
            Admission::Refused => tokio::spawn(refuse(stream)),
        };
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_tx);
    // Every connection task holds a sender: `recv` returns `None` once the last one ends.
    let _ = open_rx.recv().await;
}

/// What one connection's task needs.
struct Connection {
    app: Router,
    limits: HttpLimits,
    root_path: Option<Arc<str>>,
    tls: Option<TlsAcceptorCell>,
    stop: watch::Receiver<bool>,
    _open: mpsc::Sender<()>,
}

impl Connection {
    /// Serves the connection, after its TLS handshake when the server speaks HTTPS (a handshake
    /// that fails or takes longer than the header timeout closes it).
    async fn serve(mut self, stream: TcpStream, ticket: ConnectionTicket, probe_only: bool) {
        let Some(acceptor) = self.tls.take().map(|cell| cell.current()) else {
            return self.serve_io(stream, ticket, probe_only).await;
        };
        let limit = self.limits.header_read_timeout;
        match tokio::time::timeout(limit, acceptor.accept(stream)).await {
            Ok(Ok(secured)) => self.serve_io(secured, ticket, probe_only).await,
            Ok(Err(error)) => tracing::debug!(%error, "TLS handshake failed"),
            Err(_) => {
                tracing::debug!("closing a connection whose TLS handshake did not end in time")
            }
        }
    }

    async fn serve_io<S>(mut self, stream: S, ticket: ConnectionTicket, probe_only: bool)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let clock = Arc::clone(&ticket.clock);
        let io = TokioIo::new(ClockedIo::new(stream, Arc::clone(&clock)));
        let service = ConnectionService {
            app: self.app,
            clock: Arc::clone(&clock),
            probe_only,
            root_path: self.root_path,
        };
        let conn = hyper::server::conn::http1::Builder::new()
            .keep_alive(!probe_only)
            .header_read_timeout(None)
            .serve_connection(io, service);
        tokio::pin!(conn);
        let limits = if probe_only {
            // A probe sends one short request at once; a slow one must not hold the lane.
            HttpLimits {
                header_read_timeout: self.limits.header_read_timeout.min(PROBE_HEADER_TIMEOUT),
                ..self.limits
            }
        } else {
            self.limits
        };
        let expiry = wait_for_expiry(&clock, &limits);
        tokio::pin!(expiry);
        tokio::select! {
            result = conn.as_mut() => log_connection_end(result),
            why = &mut expiry => log_expiry(why),
            () = ticket.evicted.notified() => {
                tracing::debug!("closing an idle connection to make room for a new one");
            }
            () = stopping(&mut self.stop) => {
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    result = conn.as_mut() => log_connection_end(result),
                    why = &mut expiry => log_expiry(why),
                }
            }
        }
    }
}

/// Resolves once the server stops accepting.
async fn stopping(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// Resolves when the connection's current idle or head phase outlasts its timeout.
async fn wait_for_expiry(clock: &ConnectionClock, limits: &HttpLimits) -> Expiry {
    loop {
        match clock.deadline(limits) {
            None => clock.wait_until_idle().await,
            Some((deadline, why)) if Instant::now() >= deadline => return why,
            Some((deadline, _)) => tokio::time::sleep_until(deadline.into()).await,
        }
    }
}

fn log_expiry(why: Expiry) {
    match why {
        Expiry::KeepAlive => tracing::debug!("closing a keep-alive connection idle too long"),
        Expiry::HeaderRead => {
            tracing::debug!("closing a connection whose request head did not arrive in time")
        }
    }
}

fn log_connection_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// Answers a connection past every limit with a 503 and closes it, reading (and discarding) a
/// little of what the client sent so the close does not reset the connection under the answer.
async fn refuse(mut stream: TcpStream) {
    let error = at_connection_limit();
    let body = error.to_json();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let refused = async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut num_read = 0;
        while num_read < 64 << 10 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => num_read += n,
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), refused).await;
}
