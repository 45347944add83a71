//! The Responses request's own settings that run nothing here but must still be well formed, as
//! OpenAI and vLLM type them: `include`, `reasoning`, `metadata`, `service_tier`. A value they
//! would refuse is a 400 naming it, not a silent 200.

use serde_json::Value;

use crate::openai::error::ApiError;
use crate::openai::responses::request::ResponsesRequest;

/// OpenAI's `ResponseIncludable` names.
const INCLUDABLE: [&str; 8] = [
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
];
const EFFORTS: [&str; 7] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];
const SUMMARIES: [&str; 3] = ["auto", "concise", "detailed"];
const SERVICE_TIERS: [&str; 5] = ["auto", "default", "flex", "scale", "priority"];
/// OpenAI's metadata limits: pairs, key and value lengths.
const MAX_METADATA_PAIRS: usize = 16;
const MAX_METADATA_KEY_CHARS: usize = 64;
const MAX_METADATA_VALUE_CHARS: usize = 512;

/// Checks the settings; the first problem is the error.
pub fn check_settings(request: &ResponsesRequest) -> Result<(), ApiError> {
    for (index, name) in request.include.iter().flatten().enumerate() {
        if !INCLUDABLE.contains(&name.as_str()) {
            return Err(ApiError::invalid(
                format!("include[{index}]"),
                format!("{name:?} is not one of {}", INCLUDABLE.join(", ")),
            ));
        }
    }
    check_reasoning(request.reasoning.as_ref())?;
    check_metadata(request.metadata.as_ref())?;
    match &request.service_tier {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(tier)) if SERVICE_TIERS.contains(&tier.as_str()) => Ok(()),
        Some(other) => Err(ApiError::invalid(
            "service_tier",
            format!(
                "`service_tier` must be one of {}, got {other}",
                SERVICE_TIERS.join(", ")
            ),
        )),
    }
}

fn one_of(value: Option<&Value>, allowed: &[&str], param: &str) -> Result<(), ApiError> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(text)) if allowed.contains(&text.as_str()) => Ok(()),
        Some(other) => Err(ApiError::invalid(
            param,
            format!(
                "`{param}` must be one of {}, got {other}",
                allowed.join(", ")
            ),
        )),
    }
}

fn check_reasoning(reasoning: Option<&Value>) -> Result<(), ApiError> {
    match reasoning {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(fields)) => {
            one_of(fields.get("effort"), &EFFORTS, "reasoning.effort")?;
            one_of(fields.get("summary"), &SUMMARIES, "reasoning.summary")?;
            one_of(
                fields.get("generate_summary"),
                &SUMMARIES,
                "reasoning.generate_summary",
            )
        }
        Some(_) => Err(ApiError::invalid(
            "reasoning",
            "`reasoning` must be an object (`effort`, `summary`)",
        )),
    }
}

fn check_metadata(metadata: Option<&Value>) -> Result<(), ApiError> {
    let pairs = match metadata {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(pairs)) => pairs,
        Some(_) => {
            return Err(ApiError::invalid(
                "metadata",
                "`metadata` must be an object of strings",
            ))
        }
    };
    if pairs.len() > MAX_METADATA_PAIRS {
        return Err(ApiError::invalid(
            "metadata",
            format!("`metadata` holds at most {MAX_METADATA_PAIRS} pairs"),
        ));
    }
    for (key, value) in pairs {
        let param = format!("metadata.{key}");
        if key.chars().count() > MAX_METADATA_KEY_CHARS {
            return Err(ApiError::invalid(
                param,
                format!("metadata keys are at most {MAX_METADATA_KEY_CHARS} characters"),
            ));
        }
        match value.as_str() {
            Some(text) if text.chars().count() <= MAX_METADATA_VALUE_CHARS => {}
            Some(_) => {
                return Err(ApiError::invalid(
                    param,
                    format!("metadata values are at most {MAX_METADATA_VALUE_CHARS} characters"),
                ))
            }
            None => return Err(ApiError::invalid(param, "metadata values must be strings")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(body: Value) -> Result<(), ApiError> {
        let request: ResponsesRequest = serde_json::from_value(body).expect("a request");
        check_settings(&request)
    }

    #[test]
    fn well_formed_settings_pass() {
        let body = json!({"input": "x", "include": ["message.output_text.logprobs",
            "reasoning.encrypted_content"], "reasoning": {"effort": "low", "summary": "auto"},
            "metadata": {"user": "42", "trace": "t"}, "service_tier": "auto"});
        assert!(check(body).is_ok());
        assert!(check(json!({"input": "x", "reasoning": null, "metadata": null})).is_ok());
    }

    #[test]
    fn what_openai_would_refuse_is_a_400_naming_it() {
        let long_key = "k".repeat(65);
        let cases = [
            (json!({"include": ["bogus"]}), "include[0]"),
            (
                json!({"include": ["message.output_text.logprobs", "x"]}),
                "include[1]",
            ),
            (json!({"reasoning": "x"}), "reasoning"),
            (
                json!({"reasoning": {"effort": "bogus"}}),
                "reasoning.effort",
            ),
            (json!({"reasoning": {"summary": 3}}), "reasoning.summary"),
            (json!({"metadata": {"a": 1}}), "metadata.a"),
            (json!({"metadata": {"a": "v".repeat(513)}}), "metadata.a"),
            (
                json!({"metadata": {long_key.clone(): "v"}}),
                &*format!("metadata.{long_key}"),
            ),
            (json!({"metadata": "m"}), "metadata"),
            (json!({"service_tier": 5}), "service_tier"),
        ];
        for (mut body, param) in cases {
            body["input"] = json!("x");
            let error = check(body.clone()).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some(param), "{body}");
        }
        let many: serde_json::Map<String, Value> =
            (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
        let error = check(json!({"input": "x", "metadata": many})).expect_err("17 pairs");
        assert_eq!(error.param.as_deref(), Some("metadata"));
    }
}
