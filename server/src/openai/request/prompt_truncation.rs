//! vLLM's `truncate_prompt_tokens`: keep only `k` tokens of a prompt — the last ones by default
//! (`truncation_side: "left"` drops from the left), the first ones with `"right"` — or with `-1`
//! `max_model_len` of them. Applied once the prompt is token ids and before it is counted, so
//! usage, echo and log-probabilities all see the prompt the model reads.

use crate::openai::error::ApiError;

const FIELD: &str = "truncate_prompt_tokens";
const SIDE_FIELD: &str = "truncation_side";

/// How many tokens of a prompt to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptTokens {
    /// `k` tokens.
    Count(usize),
    /// `max_model_len` tokens (`-1`).
    ModelLen,
}

/// Which end of a long prompt is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationSide {
    /// The start: the last tokens are kept (the default).
    Left,
    /// The end: the first tokens are kept.
    Right,
}

/// How much of a prompt to keep, and from which end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptTruncation {
    pub kept: KeptTokens,
    pub side: TruncationSide,
}

impl PromptTruncation {
    /// The request's fields: `-1` or at least 1, and `"left"` (the default) or `"right"` (a side
    /// without a count truncates nothing, as in vLLM, but must still be one of the two).
    pub fn parse(value: Option<i64>, side: Option<&str>) -> Result<Option<Self>, ApiError> {
        let side = match side {
            None | Some("left") => TruncationSide::Left,
            Some("right") => TruncationSide::Right,
            Some(other) => {
                return Err(ApiError::invalid(
                    SIDE_FIELD,
                    format!("`{SIDE_FIELD}` must be \"left\" or \"right\", got {other:?}"),
                ))
            }
        };
        let kept = match value {
            None => return Ok(None),
            Some(-1) => KeptTokens::ModelLen,
            Some(k) if k >= 1 => KeptTokens::Count(k as usize),
            Some(k) => {
                return Err(ApiError::invalid(
                    FIELD,
                    format!("`{FIELD}` must be -1 (the model's length) or at least 1, got {k}"),
                ))
            }
        };
        Ok(Some(Self { kept, side }))
    }

    /// The kept tokens; a `k` over `max_model_len` is a 400, as in vLLM.
    pub fn apply(self, mut prompt: Vec<u32>, max_model_len: usize) -> Result<Vec<u32>, ApiError> {
        let keep = match self.kept {
            KeptTokens::Count(k) if k > max_model_len => {
                return Err(ApiError::invalid(
                    FIELD,
                    format!("`{FIELD}` ({k}) is larger than the model's length ({max_model_len})"),
                ))
            }
            KeptTokens::Count(k) => k,
            KeptTokens::ModelLen => max_model_len,
        };
        if prompt.len() > keep {
            match self.side {
                TruncationSide::Left => drop(prompt.drain(..prompt.len() - keep)),
                TruncationSide::Right => prompt.truncate(keep),
            }
        }
        Ok(prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truncation(k: i64, side: Option<&str>) -> PromptTruncation {
        PromptTruncation::parse(Some(k), side)
            .expect("valid")
            .expect("set")
    }

    #[test]
    fn the_last_tokens_are_kept() {
        let prompt: Vec<u32> = (1..=10).collect();
        let last = |k| truncation(k, None);
        assert_eq!(
            last(3).apply(prompt.clone(), 100).expect("fits"),
            [8, 9, 10]
        );
        assert_eq!(last(50).apply(prompt.clone(), 100).expect("fits"), prompt);
        assert_eq!(
            last(-1).apply(prompt.clone(), 4).expect("fits"),
            [7, 8, 9, 10]
        );
        assert_eq!(PromptTruncation::parse(None, None).expect("valid"), None);
        for bad in [0, -2] {
            let error = PromptTruncation::parse(Some(bad), None).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some(FIELD));
        }
        let error = last(200)
            .apply(prompt, 100)
            .expect_err("longer than the model");
        assert_eq!(error.param.as_deref(), Some(FIELD));
    }

    #[test]
    fn the_right_side_keeps_the_first_tokens() {
        let prompt: Vec<u32> = (1..=10).collect();
        let first = truncation(3, Some("right"));
        assert_eq!(first.apply(prompt.clone(), 100).expect("fits"), [1, 2, 3]);
        assert_eq!(
            truncation(3, Some("left"))
                .apply(prompt.clone(), 100)
                .expect("fits"),
            [8, 9, 10]
        );
        assert_eq!(
            truncation(-1, Some("right"))
                .apply(prompt, 4)
                .expect("fits"),
            [1, 2, 3, 4]
        );
        assert_eq!(
            PromptTruncation::parse(None, Some("right")).expect("valid"),
            None
        );
        let error = PromptTruncation::parse(Some(3), Some("middle")).expect_err("refused");
        assert_eq!(error.param.as_deref(), Some(SIDE_FIELD));
        let error = PromptTruncation::parse(None, Some("up")).expect_err("refused");
        assert_eq!(error.param.as_deref(), Some(SIDE_FIELD));
    }
}
