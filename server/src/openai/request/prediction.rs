//! OpenAI's Predicted Outputs (`prediction`, chat): `{"type": "content", "content": "..."}`, the
//! text the client expects most of the answer to repeat (a file it asks to edit, say). It never
//! changes the answer; with prompt-lookup speculation (`--speculative-config` `ngram`), the
//! engine proposes from it first, so the parts that match come several tokens per step, and
//! `usage.completion_tokens_details` counts the proposals kept and rejected.

use std::sync::Arc;

use pagoda_text::template::MessageContent;
use pagoda_text::tokenizer::TextTokenizer;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::openai::error::ApiError;

/// `prediction`, as OpenAI spells it.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
pub struct PredictionField {
    /// Always `content`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The predicted text: a string or a list of text parts.
    #[schema(value_type = Object)]
    pub content: MessageContent,
}

/// The predicted output as token ids (`None` without one, or for an empty one); at most
/// `max_model_len` tokens, as no output is longer.
pub fn predicted_token_ids(
    tokenizer: &TextTokenizer,
    prediction: Option<&PredictionField>,
    max_model_len: usize,
) -> Result<Option<Arc<[u32]>>, ApiError> {
    let Some(prediction) = prediction else {
        return Ok(None);
    };
    if prediction.kind != "content" {
        return Err(ApiError::invalid(
            "prediction.type",
            format!(
                "`prediction.type` must be \"content\", got {:?}",
                prediction.kind
            ),
        ));
    }
    let text = prediction.content.to_text().map_err(|e| {
        ApiError::invalid("prediction.content", format!("`prediction.content`: {e}"))
    })?;
    let ids = tokenizer.encode(&text, false).map_err(|e| {
        ApiError::invalid(
            "prediction.content",
            format!("`prediction` could not be tokenized: {e}"),
        )
    })?;
    if ids.len() > max_model_len {
        return Err(ApiError::invalid(
            "prediction.content",
            format!(
                "`prediction` is {} tokens, more than the model's context ({max_model_len})",
                ids.len()
            ),
        ));
    }
    Ok((!ids.is_empty()).then(|| ids.into()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(value: serde_json::Value) -> PredictionField {
        serde_json::from_value(value).expect("a prediction")
    }

    #[test]
    fn content_as_text_or_parts_becomes_its_tokens_and_other_types_are_refused() {
        let tokenizer = crate::mock_text::byte_tokenizer().expect("the byte tokenizer");
        let text = field(json!({"type": "content", "content": "ab"}));
        let ids = predicted_token_ids(&tokenizer, Some(&text), 16).expect("read");
        let parts = field(json!({"type": "content", "content": [{"type": "text", "text": "ab"}]}));
        assert_eq!(
            predicted_token_ids(&tokenizer, Some(&parts), 16).expect("read"),
            ids
        );
        assert_eq!(
            ids.as_deref(),
            Some(&tokenizer.encode("ab", false).expect("ids")[..])
        );
        assert_eq!(
            predicted_token_ids(&tokenizer, None, 16).expect("none"),
            None
        );
        let empty = field(json!({"type": "content", "content": ""}));
        assert_eq!(
            predicted_token_ids(&tokenizer, Some(&empty), 16).expect("empty"),
            None
        );
        let other = field(json!({"type": "image", "content": "ab"}));
        let error = predicted_token_ids(&tokenizer, Some(&other), 16).expect_err("refused");
        assert_eq!(error.param.as_deref(), Some("prediction.type"));
        let long = field(json!({"type": "content", "content": "abcdef"}));
        let error = predicted_token_ids(&tokenizer, Some(&long), 2).expect_err("too long");
        assert_eq!(error.param.as_deref(), Some("prediction.content"));
    }
}
