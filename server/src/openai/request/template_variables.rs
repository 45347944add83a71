//! Template variables a chat request sets besides its `chat_template_kwargs`, as vLLM passes
//! them: `reasoning_effort` (and `enable_thinking`: false for `"none"`, true for any other
//! effort, so that Qwen3-style templates think or not as asked) and `documents` (for templates
//! that render retrieved documents). A variable the request's `chat_template_kwargs` set itself
//! is left as the request gave it.

use serde_json::{Map, Value};

use crate::chat_prompt::template_kwargs;
use crate::openai::error::ApiError;

/// The efforts OpenAI and vLLM take.
pub const REASONING_EFFORTS: [&str; 7] =
    ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// Every extra variable of a request's template: its `chat_template_kwargs`, checked, then its
/// `reasoning_effort` and `documents`.
pub fn request_template_kwargs(
    chat_template_kwargs: Option<&Value>,
    reasoning_effort: Option<&Value>,
    documents: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let mut kwargs = template_kwargs(chat_template_kwargs)?;
    add_request_variables(&mut kwargs, reasoning_effort, documents)?;
    Ok(kwargs)
}

/// Adds the request's `reasoning_effort` and `documents` to the template's `kwargs`.
fn add_request_variables(
    kwargs: &mut Map<String, Value>,
    reasoning_effort: Option<&Value>,
    documents: Option<&Value>,
) -> Result<(), ApiError> {
    match reasoning_effort {
        None | Some(Value::Null) => {}
        Some(Value::String(effort)) if REASONING_EFFORTS.contains(&effort.as_str()) => {
            let thinking = Value::Bool(effort != "none");
            kwargs
                .entry("reasoning_effort")
                .or_insert_with(|| Value::from(effort.as_str()));
            kwargs.entry("enable_thinking").or_insert(thinking);
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "reasoning_effort",
                format!(
                    "`reasoning_effort` must be one of {}",
                    REASONING_EFFORTS.join(", ")
                ),
            ))
        }
    }
    match documents {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => {
            kwargs
                .entry("documents")
                .or_insert_with(|| Value::Array(items.clone()));
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "documents",
                "`documents` must be a list of objects (e.g. {\"title\": …, \"text\": …})",
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn variables(
        kwargs: Value,
        effort: Option<Value>,
        documents: Option<Value>,
    ) -> Result<Value, ApiError> {
        let mut kwargs = kwargs.as_object().cloned().unwrap_or_default();
        add_request_variables(&mut kwargs, effort.as_ref(), documents.as_ref())?;
        Ok(Value::Object(kwargs))
    }

    #[test]
    fn effort_turns_thinking_on_or_off_unless_the_kwargs_say() {
        let low = variables(json!({}), Some(json!("low")), None).expect("valid");
        assert_eq!(
            low,
            json!({"reasoning_effort": "low", "enable_thinking": true})
        );
        let none = variables(json!({}), Some(json!("none")), None).expect("valid");
        assert_eq!(none["enable_thinking"], false);
        let own =
            variables(json!({"enable_thinking": true}), Some(json!("none")), None).expect("valid");
        assert_eq!(own["enable_thinking"], true);
        assert_eq!(variables(json!({}), None, None).expect("valid"), json!({}));
        for bad in [json!("extreme"), json!(3)] {
            let error = variables(json!({}), Some(bad), None).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some("reasoning_effort"));
        }
    }

    #[test]
    fn documents_are_passed_as_a_list_of_objects() {
        let docs = json!([{"title": "A", "text": "alpha"}]);
        let set = variables(json!({}), None, Some(docs.clone())).expect("valid");
        assert_eq!(set["documents"], docs);
        let error = variables(json!({}), None, Some(json!(["text"]))).expect_err("refused");
        assert_eq!(error.param.as_deref(), Some("documents"));
    }
}
