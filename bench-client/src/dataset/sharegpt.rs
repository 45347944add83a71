//! Reading a ShareGPT file: a JSON list of `{"id", "conversations": [{"from", "value"}, ...]}`.
//! Speakers: `human`/`user`, `gpt`/`assistant` (and the `chatgpt`, `bing`, `bard` some dumps
//! use), `system`. A malformed entry is an error that names it, never a silent skip.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::error::DatasetError;
use super::read::read_file;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    System,
    Human,
    Gpt,
}

impl Speaker {
    fn parse(from: &str) -> Option<Self> {
        match from {
            "system" => Some(Speaker::System),
            "human" | "user" => Some(Speaker::Human),
            "gpt" | "assistant" | "chatgpt" | "bing" | "bard" => Some(Speaker::Gpt),
            _ => None,
        }
    }

    /// The chat role the turn is replayed as.
    pub fn role(self) -> &'static str {
        match self {
            Speaker::System => "system",
            Speaker::Human => "user",
            Speaker::Gpt => "assistant",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub speaker: Speaker,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// The entry's `id`, or its position when it has none.
    pub id: String,
    pub turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct RawEntry {
    conversations: Vec<Value>,
}

#[derive(Deserialize)]
struct RawTurn {
    from: String,
    value: String,
}

/// Every conversation of the file, in file order.
pub fn load(path: &Path) -> Result<Vec<Conversation>, DatasetError> {
    let text = read_file(path)?;
    let error = |entry: String, message: String| DatasetError::ShareGpt {
        path: path.display().to_string(),
        entry,
        message,
    };
    let entries: Vec<Value> = serde_json::from_str(&text).map_err(|e| {
        error(
            "the file".into(),
            format!("not a JSON list of conversations: {e}"),
        )
    })?;
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let (name, id) = describe(index, &entry);
            parse_entry(entry, id).map_err(|message| error(name, message))
        })
        .collect()
}

fn parse_entry(entry: Value, id: String) -> Result<Conversation, String> {
    let raw: RawEntry = serde_json::from_value(entry).map_err(|e| e.to_string())?;
    let turns = raw
        .conversations
        .into_iter()
        .enumerate()
        .map(|(index, turn)| {
            let turn: RawTurn =
                serde_json::from_value(turn).map_err(|e| format!("turn {index}: {e}"))?;
            let speaker = Speaker::parse(&turn.from).ok_or_else(|| {
                format!(
                    "turn {index}: unknown speaker {:?} (human, gpt or system)",
                    turn.from
                )
            })?;
            Ok(Turn {
                speaker,
                text: turn.value,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Conversation { id, turns })
}

/// `("entry 3 (id \"abc\")", "abc")`: how errors name an entry, and its id.
fn describe(index: usize, entry: &Value) -> (String, String) {
    match entry.get("id") {
        Some(Value::String(id)) => (format!("entry {index} (id {id:?})"), id.clone()),
        Some(id @ Value::Number(_)) => (format!("entry {index} (id {id})"), id.to_string()),
        _ => (format!("entry {index}"), index.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::dataset::test_support::data_path;

    fn load_str(json: &str) -> Result<Vec<Conversation>, DatasetError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(json.as_bytes()).unwrap();
        load(file.path())
    }

    #[test]
    fn reads_the_sample() {
        let conversations = load(&data_path("sharegpt_sample.json")).unwrap();
        assert!(conversations.len() >= 3);
        let all_turns = conversations.iter().flat_map(|c| &c.turns);
        assert!(all_turns.clone().any(|t| t.speaker == Speaker::System));
        assert!(conversations.iter().any(|c| c.turns.len() >= 4));
        assert_eq!(conversations[0].id, "sample-1");
    }

    #[test]
    fn malformed_entries_are_named() {
        let cases = [
            (r#"{"id": "x"}"#, "not a JSON list"),
            (
                r#"[{"id": "a", "conversations": []}, {"id": "b"}]"#,
                r#"entry 1 (id "b"): missing field `conversations`"#,
            ),
            (
                r#"[{"conversations": [{"from": "human"}]}]"#,
                "entry 0: turn 0: missing field `value`",
            ),
            (
                r#"[{"id": 7, "conversations": [{"from": "robot", "value": "hi"}]}]"#,
                r#"entry 0 (id 7): turn 0: unknown speaker "robot""#,
            ),
            (
                r#"[{"id": "c", "conversations": [{"from": "gpt", "value": 3}]}]"#,
                r#"entry 0 (id "c"): turn 0: invalid type"#,
            ),
            ("[", "not a JSON list"),
        ];
        for (json, expected) in cases {
            let error = load_str(json).unwrap_err().to_string();
            assert!(error.contains(expected), "{json}: {error}");
        }
    }

    #[test]
    fn speakers_map_to_chat_roles() {
        let json = r#"[{"id": "s", "conversations": [
            {"from": "system", "value": "Be brief."},
            {"from": "user", "value": "Hi"},
            {"from": "chatgpt", "value": "Hello"}]}]"#;
        let conversation = &load_str(json).unwrap()[0];
        let roles: Vec<&str> = conversation
            .turns
            .iter()
            .map(|t| t.speaker.role())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant"]);
    }
}
