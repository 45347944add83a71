//! Stored responses (`store`, the default): what `GET /v1/responses/{id}` returns and what
//! `previous_response_id` continues, kept in memory, the oldest dropped past a fixed count.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// How many responses are kept (the oldest go first).
pub const MAX_STORED_RESPONSES: usize = 4096;

/// A finished response and the conversation it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// The Response object as it was returned.
    pub response: serde_json::Value,
    /// The chat messages up to and including the response's own (without `instructions`, which
    /// do not carry over, as OpenAI documents).
    pub messages: Vec<serde_json::Value>,
}

#[derive(Debug, Default)]
struct Entries {
    by_id: HashMap<String, Arc<StoredResponse>>,
    /// Ids in the order they were stored.
    order: VecDeque<String>,
}

/// The responses kept by id.
#[derive(Debug)]
pub struct ResponseStore {
    max_entries: usize,
    entries: Mutex<Entries>,
}

impl Default for ResponseStore {
    fn default() -> Self {
        Self::new(MAX_STORED_RESPONSES)
    }
}

impl ResponseStore {
    pub fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            entries: Mutex::new(Entries::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, id: String, stored: StoredResponse) {
        let mut entries = self.lock();
        if entries.by_id.insert(id.clone(), Arc::new(stored)).is_none() {
            entries.order.push_back(id);
        }
        while entries.order.len() > self.max_entries {
            if let Some(oldest) = entries.order.pop_front() {
                entries.by_id.remove(&oldest);
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<StoredResponse>> {
        self.lock().by_id.get(id).cloned()
    }

    /// Forgets a response; whether it was there.
    pub fn remove(&self, id: &str) -> bool {
        let mut entries = self.lock();
        let removed = entries.by_id.remove(id).is_some();
        if removed {
            entries.order.retain(|kept| kept != id);
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(n: u64) -> StoredResponse {
        StoredResponse {
            response: json!({"n": n}),
            messages: vec![json!({"role": "user", "content": n.to_string()})],
        }
    }

    #[test]
    fn the_oldest_responses_go_first_past_the_limit() {
        let store = ResponseStore::new(2);
        for n in 0..3 {
            store.insert(format!("resp_{n}"), stored(n));
        }
        assert!(store.get("resp_0").is_none());
        assert_eq!(store.get("resp_1").expect("kept").response["n"], 1);
        assert_eq!(store.get("resp_2").expect("kept").response["n"], 2);
    }

    #[test]
    fn removed_responses_are_gone_and_free_their_place() {
        let store = ResponseStore::new(2);
        store.insert("a".into(), stored(1));
        store.insert("b".into(), stored(2));
        assert!(store.remove("a"));
        assert!(!store.remove("a"));
        store.insert("c".into(), stored(3));
        assert!(store.get("b").is_some() && store.get("c").is_some());
    }
}
