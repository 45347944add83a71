//! Compiled grammars by their canonical text, least recently used evicted first. An entry is a
//! cell that the first request for its text fills: requests that arrive while it compiles wait
//! for that compilation instead of starting their own.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::matcher::CompiledGrammar;

/// A grammar being compiled or compiled; empty again if its compilation failed.
pub(crate) type GrammarCell = Arc<OnceCell<Arc<CompiledGrammar>>>;

#[derive(Debug)]
pub(crate) struct GrammarCache {
    capacity: usize,
    clock: u64,
    entries: HashMap<String, (GrammarCell, u64)>,
}

impl GrammarCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            clock: 0,
            entries: HashMap::new(),
        }
    }

    /// The cell for `key`, made (and the oldest entry evicted) if there is none. With capacity 0
    /// every call gets a fresh cell: nothing is shared.
    pub(crate) fn cell(&mut self, key: &str) -> GrammarCell {
        self.clock += 1;
        let clock = self.clock;
        if let Some((cell, used)) = self.entries.get_mut(key) {
            *used = clock;
            return Arc::clone(cell);
        }
        let cell = GrammarCell::default();
        if self.capacity == 0 {
            return cell;
        }
        if self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries
            .insert(key.to_string(), (Arc::clone(&cell), clock));
        cell
    }

    /// Drops `key`'s entry if it is `cell` and still empty (its compilation failed).
    pub(crate) fn forget_failed(&mut self, key: &str, cell: &GrammarCell) {
        let failed = self
            .entries
            .get(key)
            .is_some_and(|(entry, _)| Arc::ptr_eq(entry, cell) && !entry.initialized());
        if failed {
            self.entries.remove(key);
        }
    }

    /// Grammars compiled and kept.
    pub(crate) fn num_compiled(&self) -> usize {
        self.entries
            .values()
            .filter(|(cell, _)| cell.initialized())
            .count()
    }
}
