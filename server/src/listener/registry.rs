//! The open connections, counted against `--max-connections`. When the limit is reached a new
//! connection takes the place of the one that has been idle (or sending a request head) the
//! longest; when every connection is busy it may only use one of a few probe connections
//! (health and metrics); past those it is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use super::clock::ConnectionClock;
use crate::http_limits::NUM_PROBE_CONNECTIONS;

/// How a new connection may be served.
#[derive(Debug)]
pub enum Admission {
    /// As usual.
    Full(ConnectionTicket),
    /// Only `/health`, `/metrics` and `/version`; anything else gets 503, and the connection is
    /// not kept alive.
    ProbeOnly(ConnectionTicket),
    /// Refused: every connection and probe connection is busy.
    Refused,
}

/// A registered connection; unregisters it when dropped.
#[derive(Debug)]
pub struct ConnectionTicket {
    registry: Arc<RegistryInner>,
    id: u64,
    pub clock: Arc<ConnectionClock>,
    /// Notified when the registry wants this connection closed to make room.
    pub evicted: Arc<Notify>,
}

impl Drop for ConnectionTicket {
    fn drop(&mut self) {
        self.registry.lock().remove(self.id);
    }
}

#[derive(Debug)]
struct Entry {
    clock: Arc<ConnectionClock>,
    evicted: Arc<Notify>,
    probe_only: bool,
    /// Eviction already asked for (the connection is on its way out).
    evicting: bool,
}

/// The entries, and how many of them are not being evicted, full (`[0]`) and probe (`[1]`).
#[derive(Debug, Default)]
struct Connections {
    entries: HashMap<u64, Entry>,
    num_staying: [usize; 2],
}

impl Connections {
    fn insert(&mut self, id: u64, entry: Entry) {
        self.num_staying[usize::from(entry.probe_only)] += 1;
        self.entries.insert(id, entry);
    }

    fn remove(&mut self, id: u64) {
        if let Some(entry) = self.entries.remove(&id) {
            if !entry.evicting {
                self.num_staying[usize::from(entry.probe_only)] -= 1;
            }
        }
    }

    /// Tells the connection idle (or sending its head) the longest to close: among probe
    /// connections (`Some(true)`), among full ones (`Some(false)`), or among all. Returns whether
    /// there was one.
    fn evict_longest_idle(&mut self, probe_only: Option<bool>) -> bool {
        let oldest = self
            .entries
            .values_mut()
            .filter(|e| !e.evicting && probe_only.is_none_or(|p| p == e.probe_only))
            .filter_map(|e| e.clock.phase().since().map(|since| (since, e)))
            .min_by_key(|(since, _)| *since);
        let Some((_, entry)) = oldest else {
            return false;
        };
        entry.evicting = true;
        entry.evicted.notify_one();
        self.num_staying[usize::from(entry.probe_only)] -= 1;
        true
    }
}

#[derive(Debug, Default)]
struct RegistryInner {
    connections: Mutex<Connections>,
}

impl RegistryInner {
    fn lock(&self) -> MutexGuard<'_, Connections> {
        self.connections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The open connections.
#[derive(Debug)]
pub struct ConnectionRegistry {
    inner: Arc<RegistryInner>,
    max_connections: usize,
    next_id: std::sync::atomic::AtomicU64,
}

impl ConnectionRegistry {
    pub fn new(max_connections: usize) -> Self {
        Self {
            inner: Arc::default(),
            max_connections: max_connections.max(1),
            next_id: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Number of connections open (those being evicted included).
    #[cfg(test)]
    pub fn num_open(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// Registers a connection accepted at `now`, making room if needed.
    pub fn admit(&self, now: Instant) -> Admission {
        let mut connections = self.inner.lock();
        let has_room = connections.num_staying[0] < self.max_connections
            || connections.evict_longest_idle(Some(false));
        let probe_only = if has_room {
            false
        } else if connections.num_staying[1] < NUM_PROBE_CONNECTIONS
            || connections.evict_longest_idle(Some(true))
        {
            true
        } else {
            return Admission::Refused;
        };
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let clock = ConnectionClock::new(now);
        let evicted = Arc::new(Notify::new());
        connections.insert(
            id,
            Entry {
                clock: Arc::clone(&clock),
                evicted: Arc::clone(&evicted),
                probe_only,
                evicting: false,
            },
        );
        let ticket = ConnectionTicket {
            registry: Arc::clone(&self.inner),
            id,
            clock,
            evicted,
        };
        if probe_only {
            Admission::ProbeOnly(ticket)
        } else {
            Admission::Full(ticket)
        }
    }

    /// Asks the connection idle the longest to close (e.g. when file descriptors run out).
    /// Returns whether one was found.
    pub fn evict_one(&self) -> bool {
        self.inner.lock().evict_longest_idle(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(admission: Admission) -> ConnectionTicket {
        match admission {
            Admission::Full(ticket) => ticket,
            other => panic!("expected a full connection, got {other:?}"),
        }
    }

    fn is_notified(ticket: &ConnectionTicket) -> bool {
        let notified = ticket.evicted.notified();
        futures_util::pin_mut!(notified);
        futures_util::FutureExt::now_or_never(notified).is_some()
    }

    #[test]
    fn at_the_limit_the_longest_idle_connection_makes_room() {
        let registry = ConnectionRegistry::new(2);
        let start = Instant::now();
        let oldest = ticket(registry.admit(start));
        let newer = ticket(registry.admit(start + std::time::Duration::from_millis(1)));
        let third = ticket(registry.admit(start));
        assert_eq!(registry.num_open(), 3, "the evicted one is still closing");
        // `oldest` was told to go (its notification is stored), `newer` was not.
        assert!(is_notified(&oldest));
        assert!(!is_notified(&newer));
        drop(oldest);
        assert_eq!(registry.num_open(), 2);
        drop((newer, third));
        assert_eq!(registry.num_open(), 0);
    }

    #[test]
    fn busy_connections_are_never_evicted_probes_get_a_few_more_then_refusal() {
        let registry = ConnectionRegistry::new(1);
        let busy = ticket(registry.admit(Instant::now()));
        let _request = busy.clock.start_request();
        let mut probes = Vec::new();
        for _ in 0..NUM_PROBE_CONNECTIONS {
            match registry.admit(Instant::now()) {
                Admission::ProbeOnly(ticket) => probes.push(ticket),
                other => panic!("expected a probe connection, got {other:?}"),
            }
        }
        // A full probe lane makes room by closing its longest idle connection...
        match registry.admit(Instant::now()) {
            Admission::ProbeOnly(ticket) => probes.push(ticket),
            other => panic!("expected a probe connection, got {other:?}"),
        }
        let num_before = probes.len();
        probes.retain(|probe| !is_notified(probe));
        assert_eq!(probes.len(), num_before - 1, "one probe connection evicted");
        // ... and refuses only when every probe connection is busy too.
        let _busy_probes: Vec<_> = probes.iter().map(|p| p.clock.start_request()).collect();
        assert!(matches!(registry.admit(Instant::now()), Admission::Refused));
        probes.pop();
        assert!(matches!(
            registry.admit(Instant::now()),
            Admission::ProbeOnly(_)
        ));
    }
}
