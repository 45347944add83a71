//! The result file of `serve`: written whole (`--save-result`), or appended to as JSON Lines
//! (`--append-result`, as `vllm bench serve` does).

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::Value;

/// Writes `result` to `path`: pretty JSON replacing the file, or (`--append-result`) one
/// compact line appended, on a line of its own.
pub fn save_result(path: &Path, result: &Value, append: bool) -> anyhow::Result<()> {
    if !append {
        std::fs::write(path, serde_json::to_string_pretty(result)?)?;
        return Ok(());
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)?;
    let length = file.metadata()?.len();
    let mut line = String::new();
    if length > 0 {
        let mut last = [0u8];
        file.seek(SeekFrom::Start(length - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.push('\n');
        }
    }
    line.push_str(&serde_json::to_string(result)?);
    line.push('\n');
    file.write_all(line.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--append-result` adds one JSON line per run; a file vLLM left without a final newline
    /// gets one first.
    #[test]
    fn appended_results_are_one_json_line_each() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("results.jsonl");
        std::fs::write(&path, r#"{"vllm": true}"#).expect("writes");
        for index in 0..2 {
            save_result(
                &path,
                &serde_json::json!({"run": index, "nested": {"a": [1, 2]}}),
                true,
            )
            .expect("appends");
        }
        let text = std::fs::read_to_string(&path).expect("reads");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[2]["run"], 1);
        assert!(text.ends_with('\n'));
        save_result(&path, &serde_json::json!({"run": 9}), false).expect("replaces");
        let replaced: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("reads")).expect("JSON");
        assert_eq!(replaced["run"], 9);
    }
}
