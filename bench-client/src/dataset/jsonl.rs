//! Custom JSONL: one JSON object per line, `{"prompt": "..."}` or `{"messages": [{"role",
//! "content"}, ...]}`, with `output_tokens` (or its alias `max_tokens`) unless the command line
//! gives one for all. Blank lines are skipped; other fields are ignored. Lines are used in file
//! order, cycled when the file is shorter than the workload.

use std::path::Path;

use pagoda_text::tokenizer::TextTokenizer;
use serde::Deserialize;

use super::error::DatasetError;
use super::read::{count_tokens, read_file};
use crate::workload::{Message, Prompt, RequestSpec};

#[derive(Deserialize)]
struct Line {
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    output_tokens: Option<usize>,
    max_tokens: Option<usize>,
}

/// A parsed line: the prompt and the output length, tokens not yet counted.
struct Entry {
    prompt: Prompt,
    output_tokens: usize,
}

pub(super) fn build(
    path: &Path,
    output_tokens: Option<usize>,
    num_prompts: usize,
    tokenizer: &TextTokenizer,
) -> Result<Vec<RequestSpec>, DatasetError> {
    if output_tokens == Some(0) {
        return Err(DatasetError::InvalidConfig(
            "the output length must be at least 1".into(),
        ));
    }
    let entries = load(path, output_tokens)?;
    if entries.is_empty() {
        return Err(DatasetError::Empty {
            path: path.display().to_string(),
            message: "no requests (one JSON object per line)".into(),
        });
    }
    // Count tokens once per distinct line, then cycle.
    let distinct = entries
        .into_iter()
        .take(num_prompts)
        .map(|entry| {
            Ok(RequestSpec {
                input_tokens: count_tokens(tokenizer, &entry.prompt.as_text())?,
                prompt: entry.prompt,
                output_tokens: entry.output_tokens,
                conversation: None,
                model: None,
            })
        })
        .collect::<Result<Vec<_>, DatasetError>>()?;
    Ok(distinct.iter().cycle().take(num_prompts).cloned().collect())
}

/// The requests (non-empty lines) of the file.
pub(super) fn num_requests(
    path: &Path,
    output_tokens: Option<usize>,
) -> Result<usize, DatasetError> {
    Ok(load(path, output_tokens)?.len())
}

fn load(path: &Path, output_override: Option<usize>) -> Result<Vec<Entry>, DatasetError> {
    let text = read_file(path)?;
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry = parse_line(line, output_override).map_err(|message| DatasetError::Jsonl {
            path: path.display().to_string(),
            line: index + 1,
            message,
        })?;
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_line(line: &str, output_override: Option<usize>) -> Result<Entry, String> {
    let line: Line = serde_json::from_str(line).map_err(|e| format!("invalid JSON object: {e}"))?;
    let prompt = match (line.prompt, line.messages) {
        (Some(prompt), None) => Prompt::Text(prompt),
        (None, Some(messages)) => {
            if messages.is_empty() {
                return Err("\"messages\" is empty".into());
            }
            if let Some(message) = messages.iter().find(|m| !is_known_role(&m.role)) {
                return Err(format!(
                    "unknown role {:?} (system, user or assistant)",
                    message.role
                ));
            }
            Prompt::Messages(messages)
        }
        (Some(_), Some(_)) => return Err("both \"prompt\" and \"messages\": give one".into()),
        (None, None) => return Err("neither \"prompt\" nor \"messages\"".into()),
    };
    let output_tokens = match (line.output_tokens, line.max_tokens) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "\"output_tokens\" {a} and \"max_tokens\" {b} disagree"
            ))
        }
        (own, alias) => output_override.or(own).or(alias),
    };
    match output_tokens {
        Some(0) => Err("the output length must be at least 1".into()),
        Some(output_tokens) => Ok(Entry { prompt, output_tokens }),
        None => Err("no \"output_tokens\" (or \"max_tokens\"), and no output length was given for all lines".into()),
    }
}

/// The chat roles a message may have.
fn is_known_role(role: &str) -> bool {
    matches!(role, "system" | "user" | "assistant")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::dataset::test_support::tokenizer;

    fn build_str(
        jsonl: &str,
        output_tokens: Option<usize>,
        num_prompts: usize,
    ) -> Result<Vec<RequestSpec>, DatasetError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(jsonl.as_bytes()).unwrap();
        build(file.path(), output_tokens, num_prompts, tokenizer())
    }

    const SAMPLE: &str = r#"{"prompt": "Write a limerick about a cat.", "output_tokens": 40}

{"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi!"}], "max_tokens": 5, "note": "ignored"}
"#;

    #[test]
    fn reads_prompts_and_messages_and_counts_tokens() {
        let requests = build_str(SAMPLE, None, 2).unwrap();
        assert_eq!(
            requests[0].prompt,
            Prompt::Text("Write a limerick about a cat.".into())
        );
        assert_eq!(requests[0].output_tokens, 40);
        assert_eq!(requests[1].prompt.as_messages().len(), 2);
        assert_eq!(requests[1].output_tokens, 5);
        for request in &requests {
            let ids = tokenizer()
                .encode(&request.prompt.as_text(), false)
                .unwrap();
            assert_eq!(request.input_tokens, ids.len());
            assert_eq!(request.conversation, None);
        }
    }

    #[test]
    fn cycles_in_file_order_and_the_override_wins() {
        let requests = build_str(SAMPLE, Some(7), 5).unwrap();
        assert_eq!(requests.len(), 5);
        assert_eq!(requests[0], requests[2]);
        assert_eq!(requests[1], requests[3]);
        assert_eq!(requests[0], requests[4]);
        assert!(requests.iter().all(|r| r.output_tokens == 7));
        assert!(build_str(SAMPLE, None, 0).unwrap().is_empty());
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            (
                "{\"prompt\": \"a\", \"output_tokens\": 1}\nnot json\n",
                ":2: invalid JSON object",
            ),
            (
                "{\"output_tokens\": 3}\n",
                ":1: neither \"prompt\" nor \"messages\"",
            ),
            ("\n\n{\"prompt\": \"a\"}\n", ":3: no \"output_tokens\""),
            (
                "{\"prompt\": \"a\", \"messages\": [], \"max_tokens\": 1}",
                ":1: both",
            ),
            (
                "{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}], \"max_tokens\": 1}",
                ":1: unknown role \"robot\"",
            ),
            (
                "{\"messages\": [{\"role\": \"user\"}], \"max_tokens\": 1}",
                ":1: invalid JSON object: missing field `content`",
            ),
            (
                "{\"prompt\": \"a\", \"output_tokens\": 0}",
                ":1: the output length must be at least 1",
            ),
            (
                "{\"prompt\": \"a\", \"output_tokens\": 2, \"max_tokens\": 3}",
                ":1: \"output_tokens\" 2 and \"max_tokens\" 3 disagree",
            ),
        ];
        for (jsonl, expected) in cases {
            let error = build_str(jsonl, None, 1).unwrap_err().to_string();
            assert!(error.contains(expected), "{jsonl:?}: {error}");
        }
        let error = build_str("\n \n", None, 1).unwrap_err().to_string();
        assert!(error.contains("no requests"), "{error}");
    }
}
