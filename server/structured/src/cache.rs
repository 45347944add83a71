//! Compiled grammars by their canonical text, least recently used evicted first.

use std::collections::HashMap;
use std::sync::Arc;

use crate::matcher::CompiledGrammar;

#[derive(Debug)]
pub(crate) struct GrammarCache {
    capacity: usize,
    clock: u64,
    entries: HashMap<String, (Arc<CompiledGrammar>, u64)>,
}

impl GrammarCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            clock: 0,
            entries: HashMap::new(),
        }
    }

    pub(crate) fn get(&mut self, key: &str) -> Option<Arc<CompiledGrammar>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|(grammar, used)| {
            *used = clock;
            Arc::clone(grammar)
        })
    }

    pub(crate) fn insert(&mut self, key: String, grammar: Arc<CompiledGrammar>) {
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.clock += 1;
        self.entries.insert(key, (grammar, self.clock));
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
