//! vLLM's `stop_reason`: beside `finish_reason`, what ended a choice — the stop string that
//! matched, the `stop_token_ids` token that was generated, or `"repetition_detected"`; `null` for
//! the model's EOS (or end of turn), the length limit and an abort.

use serde::Serialize;
use serde_json::Value;

/// What ended a choice, when the request asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A token id the request listed in `stop_token_ids`.
    TokenId(u32),
    /// One of the request's `stop` strings.
    Text(String),
    /// `repetition_detection` caught a loop.
    Repetition,
}

impl StopReason {
    /// The JSON vLLM writes: the id, the string, or `"repetition_detected"`; `null` for none.
    pub fn to_json(reason: Option<&StopReason>) -> Value {
        serde_json::to_value(reason).unwrap_or(Value::Null)
    }
}

impl Serialize for StopReason {
    /// vLLM's spelling: the token id, the stop string, or `"repetition_detected"`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StopReason::TokenId(id) => serializer.serialize_u32(*id),
            StopReason::Text(text) => serializer.serialize_str(text),
            StopReason::Repetition => serializer.serialize_str("repetition_detected"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_reason_is_written_as_vllm_writes_it() {
        assert_eq!(StopReason::to_json(None), Value::Null);
        assert_eq!(StopReason::to_json(Some(&StopReason::TokenId(7))), json!(7));
        let text = StopReason::Text("\n\n".into());
        assert_eq!(StopReason::to_json(Some(&text)), json!("\n\n"));
        let repetition = StopReason::to_json(Some(&StopReason::Repetition));
        assert_eq!(repetition, json!("repetition_detected"));
    }
}
