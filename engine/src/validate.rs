//! The one place a request is checked: [`RequestLimits::validate`] turns an [`EngineRequest`]
//! into a [`ValidRequest`], the only kind the engine queues. It runs in the caller's thread
//! (through `EngineHandle::validate`), so a bad request fails before it reaches the queue.

use crate::error::EngineError;
use crate::request::{EngineRequest, RequestId, ThinkingBudget};

/// A request that passed every check, with the most tokens it may generate. Only
/// [`RequestLimits::validate`] makes one, so the engine never re-checks what it queues.
#[derive(Debug, Clone)]
pub struct ValidRequest {
    request: EngineRequest,
    max_output_tokens: usize,
}

impl ValidRequest {
    pub fn request(&self) -> &EngineRequest {
        &self.request
    }

    pub fn id(&self) -> RequestId {
        self.request.id
    }

    /// The most tokens this request may generate (`max_tokens`, or what the context leaves).
    pub fn max_output_tokens(&self) -> usize {
        self.max_output_tokens
    }

    /// The same request under another id and seed (one choice of several): neither changes
    /// what was checked.
    pub fn with_id_and_seed(&self, id: RequestId, seed: Option<u64>) -> Self {
        let mut copy = self.clone();
        copy.request.id = id;
        copy.request.sampling.seed = seed;
        copy
    }

    pub(crate) fn into_parts(self) -> (EngineRequest, usize) {
        (self.request, self.max_output_tokens)
    }
}

/// What a request is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    pub vocab_size: usize,
    pub max_model_len: usize,
    /// Tokens the whole KV cache holds.
    pub kv_capacity_tokens: usize,
    /// The most alternatives `logprobs` (`top_logprobs`) and `prompt_logprobs` may ask for.
    pub max_logprobs: usize,
}

impl RequestLimits {
    /// Checks a request once: its token ids against the vocabulary, its sampling and stop
    /// parameters, and its length against the context and the whole KV cache.
    pub fn validate(&self, request: EngineRequest) -> Result<ValidRequest, EngineError> {
        let max_output_tokens = self.max_output_tokens(&request)?;
        Ok(ValidRequest {
            request,
            max_output_tokens,
        })
    }

    /// The request's resolved most number of output tokens, or what is wrong with it.
    fn max_output_tokens(&self, request: &EngineRequest) -> Result<usize, EngineError> {
        let invalid =
            |field: &'static str, message: String| EngineError::InvalidRequest { field, message };
        let num_prompt = request.prompt.len();
        if num_prompt == 0 {
            return Err(invalid("prompt", "must contain at least one token".into()));
        }
        if let Some(&bad) = request
            .prompt
            .iter()
            .find(|&&id| id as usize >= self.vocab_size)
        {
            return Err(invalid(
                "prompt",
                format!(
                    "token id {bad} is outside the vocabulary (size {})",
                    self.vocab_size
                ),
            ));
        }
        if let Some(&bad) = request
            .stop
            .stop_token_ids
            .iter()
            .find(|&&id| id as usize >= self.vocab_size)
        {
            return Err(invalid(
                "stop_token_ids",
                format!(
                    "token id {bad} is outside the vocabulary (size {})",
                    self.vocab_size
                ),
            ));
        }
        if let Some(&(bad, _)) = request
            .sampling
            .logit_bias
            .iter()
            .find(|&&(id, _)| id as usize >= self.vocab_size)
        {
            return Err(invalid(
                "logit_bias",
                format!(
                    "token id {bad} is outside the vocabulary (size {})",
                    self.vocab_size
                ),
            ));
        }
        request.sampling.validate()?;
        if let Some(repetition) = &request.stop.repetition {
            repetition.validate()?;
        }
        self.check_restricted_ids(request)?;
        if request.constraint.is_some() && request.sampling.thinking_budget.is_some() {
            return Err(invalid(
                "thinking_token_budget",
                "cannot be combined with a structured output or a forced tool call (the grammar \
                 covers the whole output, thinking included)"
                    .into(),
            ));
        }
        check_max_logprobs("top_logprobs", request.sampling.logprobs, self.max_logprobs)?;
        check_max_logprobs(
            "prompt_logprobs",
            request.prompt_logprobs,
            self.max_logprobs,
        )?;
        if request.stop.max_tokens == Some(0) {
            return Err(invalid("max_tokens", "must be at least 1".into()));
        }
        if let Some(max_tokens) = request.stop.max_tokens {
            if request.stop.min_tokens > max_tokens {
                return Err(invalid(
                    "min_tokens",
                    format!(
                        "({}) must not exceed max_tokens ({max_tokens})",
                        request.stop.min_tokens
                    ),
                ));
            }
        }
        let max_output = self.check_length(num_prompt, request.stop.max_tokens)?;
        if request.stop.min_tokens > max_output {
            return Err(invalid(
                "min_tokens",
                format!(
                    "({}) exceeds the {max_output} tokens this request may generate",
                    request.stop.min_tokens
                ),
            ));
        }
        Ok(max_output)
    }

    /// `allowed_token_ids`, `bad_words` and `logprob_token_ids` name tokens of the vocabulary.
    fn check_restricted_ids(&self, request: &EngineRequest) -> Result<(), EngineError> {
        let sampling = &request.sampling;
        let allowed = sampling.allowed_token_ids.iter().flatten();
        let banned = sampling.bad_words.iter().flatten();
        let scored = sampling.logprob_token_ids.iter().flatten();
        let tags = sampling
            .thinking_budget
            .iter()
            .flat_map(ThinkingBudget::token_ids);
        for (field, mut ids) in [
            (
                "allowed_token_ids",
                Box::new(allowed) as Box<dyn Iterator<Item = &u32>>,
            ),
            ("bad_words", Box::new(banned)),
            ("logprob_token_ids", Box::new(scored)),
            ("thinking_token_budget", Box::new(tags)),
        ] {
            if let Some(&bad) = ids.find(|&&id| id as usize >= self.vocab_size) {
                return Err(EngineError::InvalidRequest {
                    field,
                    message: format!(
                        "token id {bad} is outside the vocabulary (size {})",
                        self.vocab_size
                    ),
                });
            }
        }
        Ok(())
    }

    fn check_length(
        &self,
        num_prompt: usize,
        max_tokens: Option<usize>,
    ) -> Result<usize, EngineError> {
        let max_model_len = self.max_model_len;
        if num_prompt >= max_model_len {
            return Err(EngineError::RequestTooLarge(format!(
                "the prompt has {num_prompt} tokens, but max_model_len is {max_model_len}, leaving no room to generate"
            )));
        }
        let max_output = max_tokens.unwrap_or(max_model_len - num_prompt);
        if num_prompt + max_output > max_model_len {
            return Err(EngineError::RequestTooLarge(format!(
                "prompt ({num_prompt} tokens) + max_tokens ({max_output}) = {} exceeds max_model_len {max_model_len}",
                num_prompt + max_output
            )));
        }
        if num_prompt + max_output > self.kv_capacity_tokens {
            return Err(EngineError::RequestTooLarge(format!(
                "prompt + max_tokens = {} tokens exceeds the whole KV cache ({} tokens)",
                num_prompt + max_output,
                self.kv_capacity_tokens
            )));
        }
        Ok(max_output)
    }
}

/// The one rule for how many log-probability alternatives a request may ask for: at most
/// `max_logprobs` (the server's `--max-logprobs`). `field` is the request field that asked (an
/// API may spell it its own way, e.g. completions' `logprobs`).
pub fn check_max_logprobs(
    field: &'static str,
    asked: Option<usize>,
    max_logprobs: usize,
) -> Result<(), EngineError> {
    match asked {
        Some(n) if n > max_logprobs => Err(EngineError::InvalidRequest {
            field,
            message: format!(
                "must be at most {max_logprobs} (the server's --max-logprobs), got {n}"
            ),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{RequestId, SamplingParams, StopConditions};

    const LIMITS: RequestLimits = RequestLimits {
        vocab_size: 100,
        max_model_len: 64,
        kv_capacity_tokens: 48,
        max_logprobs: 20,
    };

    fn request(prompt: Vec<u32>, max_tokens: Option<usize>) -> EngineRequest {
        let stop = StopConditions {
            max_tokens,
            ..StopConditions::default()
        };
        EngineRequest::new(RequestId(1), prompt, SamplingParams::greedy(), stop)
    }

    #[test]
    fn logprobs_are_capped_by_the_server_s_max_logprobs() {
        let asking = |top: Option<usize>, prompt: Option<usize>| {
            let mut r = request(vec![1, 2], Some(4));
            r.sampling.logprobs = top;
            r.prompt_logprobs = prompt;
            r
        };
        assert!(LIMITS.validate(asking(Some(20), Some(20))).is_ok());
        for (r, field) in [
            (asking(Some(21), None), "top_logprobs"),
            (asking(None, Some(21)), "prompt_logprobs"),
        ] {
            match LIMITS.validate(r) {
                Err(EngineError::InvalidRequest { field: f, message }) => {
                    assert_eq!(f, field);
                    assert!(message.contains("at most 20"), "{message}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
        let raised = RequestLimits {
            max_logprobs: 100,
            ..LIMITS
        };
        assert!(raised.validate(asking(Some(100), Some(100))).is_ok());
    }

    #[test]
    fn accepts_and_resolves_max_tokens() {
        let max_output =
            |limits: RequestLimits, r| limits.validate(r).map(|valid| valid.max_output_tokens());
        assert_eq!(max_output(LIMITS, request(vec![1, 2], Some(10))), Ok(10));
        let unbounded = RequestLimits {
            kv_capacity_tokens: 1000,
            ..LIMITS
        };
        assert_eq!(max_output(unbounded, request(vec![1, 2], None)), Ok(62));
    }

    #[test]
    fn rejects_bad_input_with_the_field_named() {
        let field_of = |r: EngineRequest| match LIMITS.validate(r) {
            Err(EngineError::InvalidRequest { field, .. }) => field,
            other => panic!("expected invalid request, got {other:?}"),
        };
        assert_eq!(field_of(request(vec![], Some(1))), "prompt");
        assert_eq!(field_of(request(vec![100], Some(1))), "prompt");
        assert_eq!(field_of(request(vec![1], Some(0))), "max_tokens");
        let mut hot = request(vec![1], Some(1));
        hot.sampling.temperature = -1.0;
        assert_eq!(field_of(hot), "temperature");
        let mut nan = request(vec![1], Some(1));
        nan.sampling.top_p = f32::NAN;
        assert_eq!(field_of(nan), "top_p");
        let mut min = request(vec![1], Some(2));
        min.stop.min_tokens = 3;
        assert_eq!(field_of(min), "min_tokens");
        let mut outside = request(vec![1], Some(1));
        outside.sampling.logit_bias = vec![(1, 5.0), (100, 5.0)];
        assert_eq!(field_of(outside), "logit_bias");
        for bias in [100.5, -101.0, f32::NAN, f32::INFINITY] {
            let mut strong = request(vec![1], Some(1));
            strong.sampling.logit_bias = vec![(1, bias)];
            assert_eq!(field_of(strong), "logit_bias", "{bias}");
        }
        let mut fine = request(vec![1], Some(1));
        fine.sampling.logit_bias = vec![(0, -100.0), (99, 100.0)];
        assert!(LIMITS.validate(fine).is_ok());
    }

    #[test]
    fn restricted_and_banned_tokens_are_checked() {
        let field_of = |r: EngineRequest| match LIMITS.validate(r) {
            Err(EngineError::InvalidRequest { field, .. }) => field,
            other => panic!("expected invalid request, got {other:?}"),
        };
        let with = |edit: &dyn Fn(&mut SamplingParams)| {
            let mut r = request(vec![1], Some(1));
            edit(&mut r.sampling);
            r
        };
        assert_eq!(
            field_of(with(&|s| s.allowed_token_ids = Some(vec![]))),
            "allowed_token_ids"
        );
        assert_eq!(
            field_of(with(&|s| s.allowed_token_ids = Some(vec![3, 100]))),
            "allowed_token_ids"
        );
        assert_eq!(field_of(with(&|s| s.bad_words = vec![vec![]])), "bad_words");
        assert_eq!(
            field_of(with(&|s| s.bad_words = vec![vec![5], vec![6, 100]])),
            "bad_words"
        );
        assert_eq!(
            field_of(with(&|s| s.bad_words = vec![vec![1]; 129])),
            "bad_words"
        );
        assert_eq!(
            field_of(with(&|s| s.bad_words = vec![vec![1; 16]; 65])),
            "bad_words",
            "1,040 tokens in all"
        );
        let scored = |ids: Vec<u32>, logprobs: Option<usize>| {
            with(&move |s| {
                s.logprob_token_ids = Some(ids.clone());
                s.logprobs = logprobs;
            })
        };
        for bad in [
            scored(vec![1], None),
            scored(vec![], Some(0)),
            scored(vec![1; 129], Some(0)),
            scored(vec![1, 100], Some(0)),
        ] {
            assert_eq!(field_of(bad), "logprob_token_ids");
        }
        let thinking = |start: Vec<u32>, end: Vec<u32>| {
            with(&move |s| {
                s.thinking_budget = Some(ThinkingBudget {
                    max_tokens: 4,
                    start_token_ids: start.clone(),
                    end_token_ids: end.clone(),
                });
            })
        };
        for bad in [thinking(vec![], vec![2]), thinking(vec![1], vec![100])] {
            assert_eq!(field_of(bad), "thinking_token_budget");
        }
        assert!(LIMITS.validate(thinking(vec![1], vec![2, 99])).is_ok());
        let fine = with(&|s| {
            s.allowed_token_ids = Some(vec![0, 99, 99]);
            s.bad_words = vec![vec![1]; 128];
            s.logprob_token_ids = Some(vec![99; 128]);
            s.logprobs = Some(0);
        });
        assert!(LIMITS.validate(fine).is_ok());
    }

    #[test]
    fn rejects_requests_that_can_never_fit() {
        assert!(matches!(
            LIMITS.validate(request(vec![1; 64], Some(1))),
            Err(EngineError::RequestTooLarge(_))
        ));
        assert!(matches!(
            LIMITS.validate(request(vec![1; 10], Some(60))),
            Err(EngineError::RequestTooLarge(_))
        ));
        // Fits max_model_len (64) but not the cache (48 tokens).
        assert!(
            matches!(LIMITS.validate(request(vec![1; 10], Some(50))), Err(EngineError::RequestTooLarge(m)) if m.contains("KV cache"))
        );
    }
}
