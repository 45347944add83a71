//! Stored responses (`store`, the default): what `GET /v1/responses/{id}` returns and what
//! `previous_response_id` continues, kept in memory, the oldest dropped past a fixed count.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use pagoda_text::template::ChatMessage;
use serde::Serialize;

use crate::openai::responses::object::assistant_message;
use crate::openai::wire::responses::ResponseObject;
use crate::openai::wire::responses_input_items::InputItem;

/// How many responses are kept (the oldest go first).
pub const MAX_STORED_RESPONSES: usize = 4096;
/// How many bytes of JSON they may hold in all (a long conversation is stored whole with each of
/// its responses, so a count alone would not bound the memory).
pub const MAX_STORED_BYTES: usize = 64 << 20;

/// A finished (or running background) response and the conversation it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// The Response object as it was returned (what `GET` answers again).
    pub response: ResponseObject,
    /// The chat messages up to and including the response's own (without `instructions`, which
    /// do not carry over, as OpenAI documents).
    pub messages: Vec<ChatMessage>,
    /// The request's own `input` as items with ids (`GET /v1/responses/{id}/input_items`).
    pub input_items: Vec<InputItem>,
}

/// Bytes of a value's JSON.
fn json_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |json| json.len())
}

impl StoredResponse {
    /// Bytes of its JSON (what the store counts against its budget).
    fn num_bytes(&self) -> usize {
        json_len(&self.response) + json_len(&self.messages) + json_len(&self.input_items)
    }
}

/// What a finished response leaves in the store (when `store` is not false): the conversation
/// it ends, and the answer read from its output.
#[derive(Debug, Clone)]
pub struct Keeping {
    pub store: Arc<ResponseStore>,
    /// The chat messages before the response's own.
    pub conversation: Vec<ChatMessage>,
    /// The request's `input` as items with ids.
    pub input_items: Vec<InputItem>,
    /// A background response: its failure or cancellation is kept too (clients poll for it).
    pub background: bool,
}

impl Keeping {
    pub fn is_background(&self) -> bool {
        self.background
    }

    /// Stores a running background `response` under `id` (what clients poll until it ends),
    /// the conversation so far.
    pub fn keep_running(&self, id: &str, response: &ResponseObject) {
        let stored = StoredResponse {
            response: response.clone(),
            messages: self.conversation.clone(),
            input_items: self.input_items.clone(),
        };
        self.store.insert(id.to_string(), stored);
    }

    /// Stores the ended `response` under `id`, its answer after the conversation.
    pub fn keep(self, id: &str, response: &ResponseObject) {
        let mut messages = self.conversation;
        messages.push(assistant_message(&response.output));
        let stored = StoredResponse {
            response: response.clone(),
            messages,
            input_items: self.input_items,
        };
        self.store.insert(id.to_string(), stored);
    }
}

#[derive(Debug, Default)]
struct Entries {
    by_id: HashMap<String, (Arc<StoredResponse>, usize)>,
    /// Ids in the order they were stored.
    order: VecDeque<String>,
    num_bytes: usize,
}

/// The responses kept by id.
#[derive(Debug)]
pub struct ResponseStore {
    max_entries: usize,
    max_bytes: usize,
    entries: Mutex<Entries>,
}

impl Default for ResponseStore {
    fn default() -> Self {
        Self::new(MAX_STORED_RESPONSES, MAX_STORED_BYTES)
    }
}

impl ResponseStore {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            max_entries,
            max_bytes,
            entries: Mutex::new(Entries::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a response, dropping the oldest past either limit (one larger than the whole
    /// budget is not kept).
    pub fn insert(&self, id: String, stored: StoredResponse) {
        let num_bytes = stored.num_bytes();
        self.remove(&id);
        if num_bytes > self.max_bytes {
            return;
        }
        let mut entries = self.lock();
        entries
            .by_id
            .insert(id.clone(), (Arc::new(stored), num_bytes));
        entries.order.push_back(id);
        entries.num_bytes += num_bytes;
        while entries.order.len() > self.max_entries || entries.num_bytes > self.max_bytes {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = entries.by_id.remove(&oldest) {
                entries.num_bytes -= freed;
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<StoredResponse>> {
        self.lock()
            .by_id
            .get(id)
            .map(|(stored, _)| Arc::clone(stored))
    }

    /// Forgets a response; whether it was there.
    pub fn remove(&self, id: &str) -> bool {
        let mut entries = self.lock();
        let Some((_, freed)) = entries.by_id.remove(id) else {
            return false;
        };
        entries.num_bytes -= freed;
        entries.order.retain(|kept| kept != id);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::wire::responses::{ResponseShell, ResponseStatus};

    fn response(id: &str, instructions: Option<String>) -> ResponseObject {
        let shell = ResponseShell {
            instructions,
            ..ResponseShell::for_tests(id)
        };
        shell.object(ResponseStatus::Completed, Vec::new(), None)
    }

    fn stored(n: u64) -> StoredResponse {
        StoredResponse {
            response: response(&format!("resp_{n}"), None),
            messages: vec![ChatMessage::new("user", n.to_string())],
            input_items: Vec::new(),
        }
    }

    #[test]
    fn the_oldest_responses_go_first_past_the_limit() {
        let store = ResponseStore::new(2, MAX_STORED_BYTES);
        for n in 0..3 {
            store.insert(format!("resp_{n}"), stored(n));
        }
        assert!(store.get("resp_0").is_none());
        assert_eq!(
            store.get("resp_1").expect("kept").response.shell.id,
            "resp_1"
        );
        assert_eq!(
            store.get("resp_2").expect("kept").response.shell.id,
            "resp_2"
        );
    }

    #[test]
    fn removed_responses_are_gone_and_free_their_place() {
        let store = ResponseStore::new(2, MAX_STORED_BYTES);
        store.insert("a".into(), stored(1));
        store.insert("b".into(), stored(2));
        assert!(store.remove("a"));
        assert!(!store.remove("a"));
        store.insert("c".into(), stored(3));
        assert!(store.get("b").is_some() && store.get("c").is_some());
    }

    #[test]
    fn the_byte_budget_drops_the_oldest_and_refuses_what_never_fits() {
        let size = stored(1).num_bytes();
        let store = ResponseStore::new(100, 2 * size);
        for n in 1..=3 {
            store.insert(format!("r{n}"), stored(n));
        }
        assert!(store.get("r1").is_none(), "past the budget");
        assert!(store.get("r2").is_some() && store.get("r3").is_some());
        let huge = StoredResponse {
            response: response("huge", Some("x".repeat(3 * size))),
            messages: Vec::new(),
            input_items: Vec::new(),
        };
        store.insert("huge".into(), huge);
        assert!(store.get("huge").is_none());
        assert!(store.get("r3").is_some(), "nothing dropped for it");
        // Storing again under an id replaces it and counts it once.
        store.insert("r3".into(), stored(3));
        store.insert("r4".into(), stored(4));
        assert!(store.get("r3").is_some() && store.get("r4").is_some());
    }
}
