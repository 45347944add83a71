//! Where one connection stands — idle between requests, reading a request head, or serving a
//! request — and the deadline its state allows. The connection's reads and its service's
//! request/response lifecycle update it; the connection's task sleeps until the deadline.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::http_limits::HttpLimits;

/// What a connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Opened or done with its last response; no byte of a next request yet.
    Idle { since: Instant },
    /// Bytes of a request head arrived; the head is not complete.
    ReadingHead { since: Instant },
    /// At least one request is being served (its body read, its response sent).
    Busy,
}

impl Phase {
    /// Idle and half-read connections may be closed to make room; busy ones may not.
    pub fn is_evictable(&self) -> bool {
        !matches!(self, Phase::Busy)
    }

    /// When this phase began (`None` while busy).
    pub fn since(&self) -> Option<Instant> {
        match *self {
            Phase::Idle { since } | Phase::ReadingHead { since } => Some(since),
            Phase::Busy => None,
        }
    }
}

/// Why a connection was closed by its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No request arrived within `--http-keep-alive-timeout`.
    KeepAlive,
    /// A request head did not arrive in full within `--http-header-read-timeout`.
    HeaderRead,
}

/// One connection's state, shared by its reader, its service and its task.
#[derive(Debug)]
pub struct ConnectionClock {
    opened: Instant,
    /// Microseconds from `opened` to the start of the current idle or head phase.
    phase_start_us: AtomicU64,
    reading_head: AtomicBool,
    num_in_flight: AtomicUsize,
    /// Woken when the last request in flight ends, so the task re-arms its deadline.
    became_idle: Notify,
}

impl ConnectionClock {
    pub fn new(now: Instant) -> Arc<Self> {
        Arc::new(Self {
            opened: now,
            phase_start_us: AtomicU64::new(0),
            reading_head: AtomicBool::new(false),
            num_in_flight: AtomicUsize::new(0),
            became_idle: Notify::new(),
        })
    }

    pub fn phase(&self) -> Phase {
        if self.num_in_flight.load(Ordering::Acquire) > 0 {
            return Phase::Busy;
        }
        let since = self.opened
            + std::time::Duration::from_micros(self.phase_start_us.load(Ordering::Acquire));
        if self.reading_head.load(Ordering::Acquire) {
            Phase::ReadingHead { since }
        } else {
            Phase::Idle { since }
        }
    }

    /// When the current phase ends the connection, and why; `None` while busy. A brand-new
    /// connection must send its head within the header timeout (or the keep-alive timeout, if
    /// shorter).
    pub fn deadline(&self, limits: &HttpLimits) -> Option<(Instant, Expiry)> {
        match self.phase() {
            Phase::Busy => None,
            Phase::ReadingHead { since } => {
                Some((since + limits.header_read_timeout, Expiry::HeaderRead))
            }
            Phase::Idle { since } if since == self.opened => {
                let timeout = limits.header_read_timeout.min(limits.keep_alive_timeout);
                Some((since + timeout, Expiry::HeaderRead))
            }
            Phase::Idle { since } => Some((since + limits.keep_alive_timeout, Expiry::KeepAlive)),
        }
    }

    /// Bytes arrived: the first ones after an idle spell start a request head. A new
    /// connection's head timer keeps running from its opening.
    fn on_bytes_read(&self) {
        if self.num_in_flight.load(Ordering::Acquire) == 0
            && !self.reading_head.swap(true, Ordering::AcqRel)
            && self.phase_start_us.load(Ordering::Acquire) != 0
        {
            self.mark_phase_start(Instant::now());
        }
    }

    fn mark_phase_start(&self, now: Instant) {
        let micros = now.saturating_duration_since(self.opened).as_micros();
        self.phase_start_us.store(
            u64::try_from(micros).unwrap_or(u64::MAX).max(1),
            Ordering::Release,
        );
    }

    /// The service took a request: the connection is busy until [`InFlight`] drops.
    pub fn start_request(self: &Arc<Self>) -> InFlight {
        self.num_in_flight.fetch_add(1, Ordering::AcqRel);
        self.reading_head.store(false, Ordering::Release);
        InFlight {
            clock: Arc::clone(self),
        }
    }

    /// Resolves the next time the connection stops being busy (at once if that already happened
    /// since the last call).
    pub async fn wait_until_idle(&self) {
        self.became_idle.notified().await;
    }
}

/// One request in flight on a connection; dropped when its response body ends or is dropped.
#[derive(Debug)]
pub struct InFlight {
    clock: Arc<ConnectionClock>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.clock.mark_phase_start(Instant::now());
        if self.clock.num_in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.clock.became_idle.notify_one();
        }
    }
}

/// A connection's socket, reporting the bytes it reads to the connection's clock.
#[derive(Debug)]
pub struct ClockedIo<T> {
    inner: T,
    clock: Arc<ConnectionClock>,
}

impl<T> ClockedIo<T> {
    pub fn new(inner: T, clock: Arc<ConnectionClock>) -> Self {
        Self { inner, clock }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ClockedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.on_bytes_read();
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ClockedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits() -> HttpLimits {
        HttpLimits {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(60),
            ..HttpLimits::default()
        }
    }

    #[test]
    fn a_new_connection_must_send_its_head_within_the_header_timeout() {
        let opened = Instant::now();
        let clock = ConnectionClock::new(opened);
        let expected = Some((opened + Duration::from_secs(10), Expiry::HeaderRead));
        assert_eq!(clock.deadline(&limits()), expected);
        clock.on_bytes_read();
        assert_eq!(clock.phase(), Phase::ReadingHead { since: opened });
        assert_eq!(
            clock.deadline(&limits()),
            expected,
            "bytes do not extend it"
        );
    }

    #[test]
    fn a_request_in_flight_has_no_deadline_and_its_end_starts_the_keep_alive() {
        let clock = ConnectionClock::new(Instant::now());
        clock.on_bytes_read();
        let request = clock.start_request();
        assert_eq!(clock.phase(), Phase::Busy);
        assert_eq!(clock.deadline(&limits()), None);
        clock.on_bytes_read();
        assert_eq!(clock.phase(), Phase::Busy, "a pipelined head while busy");
        drop(request);
        let Some((deadline, Expiry::KeepAlive)) = clock.deadline(&limits()) else {
            panic!("idle after the response: {:?}", clock.phase());
        };
        let Phase::Idle { since } = clock.phase() else {
            panic!("idle");
        };
        assert_eq!(deadline, since + Duration::from_secs(60));
    }

    #[test]
    fn a_head_after_an_idle_spell_gets_the_header_timeout_from_its_first_byte() {
        let clock = ConnectionClock::new(Instant::now());
        drop(clock.start_request());
        std::thread::sleep(Duration::from_millis(5));
        clock.on_bytes_read();
        let Phase::ReadingHead { since } = clock.phase() else {
            panic!("reading a head: {:?}", clock.phase());
        };
        assert!(since > clock.opened + Duration::from_millis(4));
        assert_eq!(
            clock.deadline(&limits()),
            Some((since + Duration::from_secs(10), Expiry::HeaderRead))
        );
        assert!(clock.phase().is_evictable());
    }

    #[test]
    fn overlapping_requests_keep_the_connection_busy_until_the_last_ends() {
        let clock = ConnectionClock::new(Instant::now());
        let first = clock.start_request();
        let second = clock.start_request();
        drop(first);
        assert_eq!(clock.phase(), Phase::Busy);
        drop(second);
        assert!(clock.phase().is_evictable());
    }
}
