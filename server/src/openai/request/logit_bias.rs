//! `logit_bias`, as OpenAI spells it: token ids as strings → biases (their range and the ids
//! are checked by the engine's validation).

use serde_json::Value;

use crate::openai::error::ApiError;

/// `logit_bias`: an object from token ids (as strings, as OpenAI sends them) to numbers. The
/// engine checks the ids against the vocabulary and the biases against [-100, 100].
pub fn parse_logit_bias(value: Option<&Value>) -> Result<Vec<(u32, f32)>, ApiError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(ApiError::invalid(
                "logit_bias",
                format!("`logit_bias` must be an object mapping token ids to biases, got {other}"),
            ))
        }
    };
    map.iter()
        .map(|(key, value)| {
            let token_id = key.trim().parse::<u32>().map_err(|_| {
                ApiError::invalid(
                    "logit_bias",
                    format!("`logit_bias` keys must be token ids, got {key:?}"),
                )
            })?;
            let bias = value.as_f64().ok_or_else(|| {
                ApiError::invalid(
                    "logit_bias",
                    format!("`logit_bias[{key:?}]` must be a number in [-100, 100], got {value}"),
                )
            })?;
            Ok((token_id, bias as f32))
        })
        .collect()
}
