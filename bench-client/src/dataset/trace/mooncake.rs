//! Mooncake traces (github.com/kvcache-ai/Mooncake, `FAST25-release/traces`): one JSON object per
//! line, `{"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, ...]}`,
//! the timestamp in milliseconds. `hash_ids` may be absent (a unique prompt); other fields
//! (`session_id`, …) are ignored. Blank lines are skipped.

use serde::Deserialize;

use super::request::{LineError, ParsedTrace, TraceRequest};

#[derive(Deserialize)]
struct Line {
    timestamp: Option<f64>,
    input_length: Option<u64>,
    output_length: Option<u64>,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

pub(super) fn parse(text: &str) -> Result<ParsedTrace, LineError> {
    let mut parsed = ParsedTrace::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let request = parse_line(line).map_err(|message| LineError::new(index + 1, message))?;
        parsed.requests.push(request);
        parsed.num_records += 1;
    }
    Ok(parsed)
}

fn parse_line(line: &str) -> Result<TraceRequest, String> {
    let line: Line = serde_json::from_str(line).map_err(|e| {
        format!("not a Mooncake record ({{\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}}): {e}")
    })?;
    let timestamp_ms = line.timestamp.ok_or("no \"timestamp\" (milliseconds)")?;
    if !timestamp_ms.is_finite() {
        return Err(format!("timestamp {timestamp_ms} is not a finite number"));
    }
    let count = |value: Option<u64>, name: &str| {
        value
            .ok_or_else(|| format!("no \"{name}\""))
            .and_then(|v| usize::try_from(v).map_err(|_| format!("{name} {v} is too large")))
    };
    Ok(TraceRequest {
        timestamp_s: timestamp_ms / 1000.0,
        input_tokens: count(line.input_length, "input_length")?,
        output_tokens: count(line.output_length, "output_length")?,
        hash_ids: line.hash_ids,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_records_in_file_order() {
        let text = concat!(
            "{\"timestamp\": 0, \"input_length\": 6755, \"output_length\": 500, \"hash_ids\": [0, 1, 2]}\n",
            "\n",
            "{\"timestamp\": 3052, \"input_length\": 20, \"output_length\": 3, \"hash_ids\": [0], \"session_id\": \"a\"}\n",
            "{\"timestamp\": 3052.5, \"input_length\": 7, \"output_length\": 1}\n",
        );
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.num_records, 3);
        assert_eq!(
            parsed.requests[0],
            TraceRequest {
                timestamp_s: 0.0,
                input_tokens: 6755,
                output_tokens: 500,
                hash_ids: vec![0, 1, 2],
            }
        );
        assert_eq!(parsed.requests[1].timestamp_s, 3.052);
        assert_eq!(parsed.requests[1].hash_ids, [0]);
        assert_eq!(parsed.requests[2].timestamp_s, 3.0525);
        assert!(parsed.requests[2].hash_ids.is_empty());
    }

    #[test]
    fn a_malformed_line_is_named_with_its_problem() {
        let good = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n";
        for (bad, expected) in [
            ("not json", "not a Mooncake record"),
            ("{\"input_length\": 1, \"output_length\": 1}", "no \"timestamp\""),
            ("{\"timestamp\": 1, \"output_length\": 1}", "no \"input_length\""),
            ("{\"timestamp\": 1, \"input_length\": 1}", "no \"output_length\""),
            (
                "{\"timestamp\": 1, \"input_length\": -3, \"output_length\": 1}",
                "not a Mooncake record",
            ),
            (
                "{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [\"x\"]}",
                "not a Mooncake record",
            ),
        ] {
            let error = parse(&format!("{good}{good}{bad}\n")).unwrap_err();
            assert_eq!(error.line, 3, "{bad}");
            assert!(error.message.contains(expected), "{bad}: {}", error.message);
        }
    }
}
