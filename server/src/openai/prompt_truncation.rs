//! vLLM's `truncate_prompt_tokens`: keep only the last `k` tokens of a prompt (left
//! truncation), or with `-1` the last `max_model_len`. Applied once the prompt is token ids and
//! before it is counted, so usage, echo and log-probabilities all see the prompt the model reads.

use crate::openai::error::ApiError;

const FIELD: &str = "truncate_prompt_tokens";

/// How much of a prompt to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptTruncation {
    /// The last `k` tokens.
    Last(usize),
    /// The last `max_model_len` tokens (`-1`).
    ModelLen,
}

impl PromptTruncation {
    /// The request's field: `-1`, or at least 1.
    pub fn parse(value: Option<i64>) -> Result<Option<Self>, ApiError> {
        match value {
            None => Ok(None),
            Some(-1) => Ok(Some(PromptTruncation::ModelLen)),
            Some(k) if k >= 1 => Ok(Some(PromptTruncation::Last(k as usize))),
            Some(k) => Err(ApiError::invalid(
                FIELD,
                format!("`{FIELD}` must be -1 (the model's length) or at least 1, got {k}"),
            )),
        }
    }

    /// The prompt's last tokens; a `k` over `max_model_len` is a 400, as in vLLM.
    pub fn apply(self, mut prompt: Vec<u32>, max_model_len: usize) -> Result<Vec<u32>, ApiError> {
        let keep = match self {
            PromptTruncation::Last(k) if k > max_model_len => {
                return Err(ApiError::invalid(
                    FIELD,
                    format!("`{FIELD}` ({k}) is larger than the model's length ({max_model_len})"),
                ))
            }
            PromptTruncation::Last(k) => k,
            PromptTruncation::ModelLen => max_model_len,
        };
        if prompt.len() > keep {
            prompt.drain(..prompt.len() - keep);
        }
        Ok(prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_tokens_are_kept() {
        let prompt: Vec<u32> = (1..=10).collect();
        let last = |k| {
            PromptTruncation::parse(Some(k))
                .expect("valid")
                .expect("set")
        };
        assert_eq!(
            last(3).apply(prompt.clone(), 100).expect("fits"),
            [8, 9, 10]
        );
        assert_eq!(last(50).apply(prompt.clone(), 100).expect("fits"), prompt);
        assert_eq!(
            last(-1).apply(prompt.clone(), 4).expect("fits"),
            [7, 8, 9, 10]
        );
        assert_eq!(PromptTruncation::parse(None).expect("valid"), None);
        for bad in [0, -2] {
            let error = PromptTruncation::parse(Some(bad)).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some(FIELD));
        }
        let error = last(200)
            .apply(prompt, 100)
            .expect_err("longer than the model");
        assert_eq!(error.param.as_deref(), Some(FIELD));
    }
}
