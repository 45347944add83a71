//! vLLM's `prompt_logprobs`: `null` for the first prompt token (nothing predicts it), then per
//! token an object keyed by token id — the prompt's own token first, then its alternatives —
//! with `logprob`, `rank` and `decoded_token`.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Every prompt position's entries, the first `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptLogprobs(pub Vec<Option<PromptPosition>>);

/// One prompt position: token ids with their entries, in the order written; an id is written
/// once (the first entry wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptPosition(Vec<(u32, PromptTokenEntry)>);

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptTokenEntry {
    pub logprob: f32,
    pub rank: u32,
    pub decoded_token: String,
}

impl PromptPosition {
    /// Adds token `id`'s entry unless the position has one already.
    pub fn put(&mut self, id: u32, entry: impl FnOnce() -> PromptTokenEntry) {
        if !self.0.iter().any(|(known, _)| *known == id) {
            self.0.push((id, entry()));
        }
    }
}

impl Serialize for PromptPosition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (id, entry) in &self.0 {
            map.serialize_entry(&id.to_string(), entry)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_keyed_by_token_id_in_order_and_the_first_is_null() {
        let entry = |logprob, rank| {
            move || PromptTokenEntry {
                logprob,
                rank,
                decoded_token: "x".into(),
            }
        };
        let mut position = PromptPosition::default();
        position.put(7, entry(-1.5, 3));
        position.put(2, entry(-0.5, 1));
        position.put(7, entry(-9.0, 9));
        let logprobs = PromptLogprobs(vec![None, Some(position)]);
        assert_eq!(
            serde_json::to_string(&logprobs).expect("serializes"),
            r#"[null,{"7":{"logprob":-1.5,"rank":3,"decoded_token":"x"},"2":{"logprob":-0.5,"rank":1,"decoded_token":"x"}}]"#
        );
    }
}
