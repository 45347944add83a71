//! vLLM request fields this server does not implement. A client that sends one expects what it
//! asks for (beam search, a prompt as embeddings, a priority), so each is refused with a 400
//! naming it instead of being silently ignored; their "off" values pass.

use serde::Deserialize;
use serde_json::Value;

use crate::openai::error::ApiError;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct UnsupportedFields {
    pub use_beam_search: Option<bool>,
    pub prompt_embeds: Option<Value>,
    pub priority: Option<i64>,
}

impl UnsupportedFields {
    pub fn check(&self) -> Result<(), ApiError> {
        let is_set = |value: &Option<Value>| match value {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) => !items.is_empty(),
            Some(_) => true,
        };
        if self.use_beam_search == Some(true) {
            return Err(ApiError::unsupported("use_beam_search", "beam search"));
        }
        if is_set(&self.prompt_embeds) {
            return Err(ApiError::unsupported(
                "prompt_embeds",
                "a prompt given as embeddings",
            ));
        }
        match self.priority {
            None | Some(0) => Ok(()),
            Some(_) => Err(ApiError::unsupported(
                "priority",
                "priority scheduling (requests are served first come, first served)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(body: Value) -> Result<(), ApiError> {
        serde_json::from_value::<UnsupportedFields>(body)
            .expect("parses")
            .check()
    }

    #[test]
    fn what_is_asked_for_is_refused_and_off_values_pass() {
        for off in [
            json!({}),
            json!({"use_beam_search": false, "prompt_embeds": null, "priority": 0}),
        ] {
            assert!(check(off.clone()).is_ok(), "{off}");
        }
        for (body, field) in [
            (json!({"use_beam_search": true}), "use_beam_search"),
            (json!({"prompt_embeds": "AAAA"}), "prompt_embeds"),
            (json!({"priority": -1}), "priority"),
        ] {
            let error = check(body.clone()).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some(field), "{body}");
        }
    }
}
