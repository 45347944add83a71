//! The limits that keep slow or idle clients from holding the server's connections: how long a
//! request head, a request body and an idle keep-alive connection may take, and how many
//! connections may be open at once.

use std::time::Duration;

/// Connections kept beyond `max_connections` for health and metrics probes, when every
/// connection has a request in flight.
pub const NUM_PROBE_CONNECTIONS: usize = 16;
/// File descriptors kept free for everything that is not a client connection (model files,
/// logs, the listener, DNS...).
pub const NUM_RESERVED_FDS: u64 = 64;

/// What `--http-*` and `--max-connections` set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HttpLimits {
    /// From a connection's first byte of a request head (or its opening) to the head's end.
    pub header_read_timeout: Duration,
    /// How long a connection may sit between requests before the server closes it.
    pub keep_alive_timeout: Duration,
    /// From the handler's first read of a body to its last byte (408 past it).
    pub body_read_timeout: Duration,
    /// Largest body accepted (413 past it).
    pub max_request_body_bytes: usize,
    /// Most client connections open at once (idle ones are closed to make room).
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(75),
            body_read_timeout: Duration::from_secs(60),
            max_request_body_bytes: 16 << 20,
            max_connections: 4096,
        }
    }
}

impl HttpLimits {
    /// Bytes of an over-limit body the server reads and throws away so that the client, still
    /// sending, can read the 413 (a closed socket with unread data resets the connection).
    pub fn max_drain_bytes(&self) -> usize {
        self.max_request_body_bytes.saturating_mul(4).max(64 << 20)
    }
}

/// Raises the soft limit on open files to the hard limit and returns the connection limit the
/// result allows: `requested`, or less when even the hard limit is too low.
pub fn fit_connections_to_fd_limit(requested: usize) -> usize {
    let soft = raise_open_files_limit();
    let room = soft.saturating_sub(NUM_RESERVED_FDS + NUM_PROBE_CONNECTIONS as u64);
    let fitted = requested
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1);
    if fitted < requested {
        tracing::warn!(
            requested,
            fitted,
            open_files_limit = soft,
            "--max-connections is above what the open-files limit allows (ulimit -n); using {fitted}"
        );
    }
    fitted
}

/// The soft `RLIMIT_NOFILE` after raising it as far as the hard limit allows.
fn raise_open_files_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    let wanted = limit.maximum.unwrap_or(1 << 20).min(1 << 20);
    if wanted <= current {
        return current;
    }
    let raised = Rlimit {
        current: Some(wanted),
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => wanted,
        Err(error) => {
            tracing::warn!(%error, current, wanted, "cannot raise the open-files limit");
            current
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drain_bound_covers_a_few_times_the_body_limit() {
        let limits = HttpLimits::default();
        assert_eq!(limits.max_drain_bytes(), 64 << 20);
        let big = HttpLimits {
            max_request_body_bytes: 100 << 20,
            ..limits
        };
        assert_eq!(big.max_drain_bytes(), 400 << 20);
    }

    #[test]
    fn connections_fit_under_the_open_files_limit() {
        assert_eq!(fit_connections_to_fd_limit(10), 10);
        let fitted = fit_connections_to_fd_limit(usize::MAX);
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        assert!(
            (fitted as u64) < soft,
            "{fitted} connections under {soft} files"
        );
    }
}
