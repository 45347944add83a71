//! vLLM's chat `thinking_token_budget`: with a reasoning parser, a thinking section closes after
//! this many tokens (`-1`: no limit). The engine works in ids, so the reasoning tags are
//! tokenized here; the engine writes the closing tag itself once the budget is spent.

use pagoda_engine::ThinkingBudget;
use pagoda_text::reasoning::ReasoningFormat;
use pagoda_text::tokenizer::TextTokenizer;

use crate::openai::error::ApiError;

const FIELD: &str = "thinking_token_budget";

/// The budget the request asked for, in token ids (`None`: no limit).
pub fn thinking_budget(
    value: Option<i64>,
    reasoning: Option<ReasoningFormat>,
    tokenizer: &TextTokenizer,
) -> Result<Option<ThinkingBudget>, ApiError> {
    let max_tokens = match value {
        None | Some(-1) => return Ok(None),
        Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
        Some(n) => {
            return Err(ApiError::invalid(
                FIELD,
                format!("`{FIELD}` must be at least 0, or -1 for no limit, got {n}"),
            ))
        }
    };
    let Some(format) = reasoning else {
        return Err(ApiError::invalid(
            FIELD,
            format!("`{FIELD}` needs a server started with --reasoning-parser"),
        ));
    };
    let (open, close) = format.tags();
    let encode = |tag: &str| {
        tokenizer
            .encode(tag, false)
            .map_err(|e| ApiError::internal(format!("tokenizing {tag:?}: {e}")))
    };
    Ok(Some(ThinkingBudget {
        max_tokens,
        start_token_ids: encode(open)?,
        end_token_ids: encode(close)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_text::byte_tokenizer;

    #[test]
    fn the_budget_carries_the_tags_ids() {
        let tokenizer = byte_tokenizer().expect("builds");
        let budget = thinking_budget(Some(8), Some(ReasoningFormat::Qwen3), &tokenizer)
            .expect("valid")
            .expect("set");
        assert_eq!(budget.max_tokens, 8);
        assert_eq!(budget.start_token_ids, b"<think>".map(u32::from));
        assert_eq!(budget.end_token_ids, b"</think>".map(u32::from));
        let unlimited = thinking_budget(Some(-1), Some(ReasoningFormat::Qwen3), &tokenizer);
        assert_eq!(unlimited.expect("valid"), None);
        assert_eq!(
            thinking_budget(None, None, &tokenizer).expect("valid"),
            None
        );
    }

    #[test]
    fn bad_budgets_and_no_parser_are_refused() {
        let tokenizer = byte_tokenizer().expect("builds");
        for (value, reasoning) in [
            (Some(-2), Some(ReasoningFormat::DeepSeekR1)),
            (Some(10), None),
        ] {
            let error = thinking_budget(value, reasoning, &tokenizer).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some(FIELD));
        }
    }
}
