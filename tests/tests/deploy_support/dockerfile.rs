//! A Dockerfile read into its stages and instructions: enough to check the image contract
//! (user, volume, port, health check, entrypoint, environment) and to rerun its commands.
//! Continuation lines are joined; comments and parser directives are dropped.

use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone)]
pub struct Instruction {
    /// Upper-case keyword: `RUN`, `COPY`, …
    pub keyword: String,
    /// Everything after the keyword, continuation lines joined with a space.
    pub args: String,
}

#[derive(Debug, Clone)]
pub struct Stage {
    /// The base image, as written after `FROM`.
    pub base: String,
    /// The `AS` name, when there is one.
    pub name: Option<String>,
    /// The stage's instructions after its `FROM`.
    pub instructions: Vec<Instruction>,
}

impl Stage {
    /// The arguments of every instruction with this keyword, in order.
    pub fn all(&self, keyword: &str) -> Vec<&str> {
        self.instructions
            .iter()
            .filter(|instruction| instruction.keyword == keyword)
            .map(|instruction| instruction.args.as_str())
            .collect()
    }

    /// The arguments of the stage's single instruction with this keyword; panics otherwise.
    pub fn one(&self, keyword: &str) -> &str {
        let found = self.all(keyword);
        assert_eq!(found.len(), 1, "one {keyword} expected in {self:?}");
        found[0]
    }

    /// The stage's `ENV` variables (the `KEY=value` form; values without spaces or quotes).
    pub fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for args in self.all("ENV") {
            for pair in args.split_whitespace() {
                let (key, value) = pair
                    .split_once('=')
                    .unwrap_or_else(|| panic!("ENV {args}: use KEY=value"));
                assert!(
                    !value.contains('"'),
                    "ENV {key}: quoted values are not read here"
                );
                env.insert(key.to_string(), value.to_string());
            }
        }
        env
    }
}

/// Reads a Dockerfile into its stages; panics on an instruction before the first `FROM`
/// (other than `ARG`).
pub fn parse(path: &Path) -> Vec<Stage> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut stages: Vec<Stage> = Vec::new();
    for (keyword, args) in logical_lines(&text) {
        if keyword == "FROM" {
            stages.push(from_stage(&args));
        } else if let Some(stage) = stages.last_mut() {
            stage.instructions.push(Instruction { keyword, args });
        } else {
            assert_eq!(keyword, "ARG", "{}: {keyword} before FROM", path.display());
        }
    }
    assert!(!stages.is_empty(), "{}: no FROM", path.display());
    stages
}

fn from_stage(args: &str) -> Stage {
    let words: Vec<&str> = args
        .split_whitespace()
        .filter(|word| !word.starts_with("--"))
        .collect();
    let name = match words.as_slice() {
        [_, as_word, name] if as_word.eq_ignore_ascii_case("as") => Some(name.to_string()),
        [_] => None,
        _ => panic!("FROM {args}: expected `FROM image [AS name]`"),
    };
    Stage {
        base: words[0].to_string(),
        name,
        instructions: Vec::new(),
    }
}

/// (keyword, arguments) of every instruction: comments dropped, `\` continuations joined.
fn logical_lines(text: &str) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        let (body, continues) = match line.strip_suffix('\\') {
            Some(body) => (body.trim_end(), true),
            None => (line, false),
        };
        if !current.is_empty() && !body.is_empty() {
            current.push(' ');
        }
        current.push_str(body);
        if !continues && !current.is_empty() {
            let (keyword, args) = current.split_once(' ').unwrap_or((current.as_str(), ""));
            lines.push((keyword.to_ascii_uppercase(), args.trim().to_string()));
            current.clear();
        }
    }
    assert!(
        current.is_empty(),
        "the Dockerfile ends inside a continuation"
    );
    lines
}

/// The exec-form (JSON array) arguments of an instruction such as `ENTRYPOINT ["a", "b"]`.
pub fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("not an exec-form array: {args} ({e})"))
}
