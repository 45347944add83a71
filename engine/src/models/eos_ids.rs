//! `eos_token_id` in a Hugging Face JSON file (`config.json`, `generation_config.json`).

/// `eos_token_id` as a number or a list.
pub fn eos_ids(value: Option<&serde_json::Value>) -> Vec<u32> {
    match value {
        Some(serde_json::Value::Number(n)) => {
            n.as_u64().map(|v| vec![v as u32]).unwrap_or_default()
        }
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_u64())
            .map(|v| v as u32)
            .collect(),
        _ => Vec::new(),
    }
}
