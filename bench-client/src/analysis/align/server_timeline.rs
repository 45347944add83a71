//! Reading a server's request timeline (`pagoda-server --request-timeline`): one JSON object per
//! line, keyed by the request id the client sent.

use std::collections::HashMap;

use serde_json::Value;

/// What the server saw of one request, in its own Unix seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    pub received_unix_s: f64,
    pub scheduled_unix_s: Option<f64>,
    /// When each chunk carrying generated text was handed to the connection.
    pub delta_writes_unix_s: Vec<f64>,
    /// When `[DONE]` (or a whole response) was handed to the connection.
    pub done_unix_s: Option<f64>,
    pub completion_tokens: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error("line {line}: {message}")]
    BadLine { line: usize, message: String },
    #[error("request id {0:?} appears twice: give the timeline of one run only")]
    Duplicate(String),
}

/// Every request of a timeline file's text, by request id.
pub fn parse_timeline(text: &str) -> Result<HashMap<String, ServerRequest>, TimelineError> {
    let mut requests = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| TimelineError::BadLine {
            line: number + 1,
            message,
        };
        let value: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let (id, request) = request_of(&value)
            .ok_or_else(|| bad("expected request_id, received_unix_s and writes".to_string()))?;
        if requests.insert(id.clone(), request).is_some() {
            return Err(TimelineError::Duplicate(id));
        }
    }
    Ok(requests)
}

fn request_of(value: &Value) -> Option<(String, ServerRequest)> {
    let id = value.get("request_id")?.as_str()?.to_string();
    let writes = value.get("writes")?.as_array()?;
    let mut delta_writes_unix_s = Vec::new();
    let mut done_unix_s = None;
    for write in writes {
        let at = write.get(0)?.as_f64()?;
        match write.get(1)?.as_str()? {
            "delta" => delta_writes_unix_s.push(at),
            "done" | "response" => done_unix_s = Some(at),
            _ => {}
        }
    }
    let request = ServerRequest {
        received_unix_s: value.get("received_unix_s")?.as_f64()?,
        scheduled_unix_s: value.get("scheduled_unix_s").and_then(Value::as_f64),
        delta_writes_unix_s,
        done_unix_s,
        completion_tokens: value
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize,
    };
    Some((id, request))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_requests_by_id() {
        let text = r#"{"request_id":"a-0","received_unix_s":10.0,"scheduled_unix_s":10.1,"completion_tokens":2,"writes":[[10.05,"opening"],[10.2,"delta"],[10.3,"delta"],[10.31,"finish"],[10.32,"done"]]}

{"request_id":"a-1","received_unix_s":11.0,"writes":[[11.5,"response"]]}"#;
        let requests = parse_timeline(text).expect("parsed");
        let first = &requests["a-0"];
        assert_eq!(first.delta_writes_unix_s, [10.2, 10.3]);
        assert_eq!(first.done_unix_s, Some(10.32));
        assert_eq!(first.scheduled_unix_s, Some(10.1));
        assert_eq!(requests["a-1"].done_unix_s, Some(11.5));
    }

    #[test]
    fn bad_and_duplicate_lines_are_named() {
        let error = parse_timeline("{\"request_id\": 1}").expect_err("bad");
        assert!(error.to_string().starts_with("line 1:"), "{error}");
        let line = r#"{"request_id":"x","received_unix_s":1.0,"writes":[]}"#;
        let error = parse_timeline(&format!("{line}\n{line}")).expect_err("twice");
        assert!(error.to_string().contains("\"x\""), "{error}");
    }
}
