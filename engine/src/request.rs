//! What a caller submits: token ids, sampling parameters and stop conditions. Token ids only.

use std::sync::Arc;
use std::time::Instant;

use crate::constraint::TokenConstraint;
use crate::error::EngineError;
use crate::lora::adapter::LoraAdapter;
pub use crate::repetition::RepetitionDetection;
pub use crate::thinking::ThinkingBudget;

/// Identifies one request for its whole life in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "req-{}", self.0)
    }
}

/// The default of the most alternatives `top_logprobs` / `prompt_logprobs` may ask for (OpenAI's
/// cap, vLLM's default `--max-logprobs`); `EngineConfig::max_logprobs` sets it.
pub const DEFAULT_MAX_LOGPROBS: usize = 20;
/// The largest `logit_bias` magnitude (OpenAI's).
pub const MAX_LOGIT_BIAS: f32 = 100.0;
/// The most token sequences `bad_words` may ban, and their most tokens in all (vLLM's
/// `VLLM_MAX_NUM_BAD_WORDS` and `VLLM_MAX_BAD_WORDS_TOTAL_TOKENS` defaults).
pub const MAX_NUM_BAD_WORDS: usize = 128;
pub const MAX_BAD_WORDS_TOTAL_TOKENS: usize = 1024;
/// The most tokens `logprob_token_ids` may name (vLLM's `MAX_LOGPROB_TOKEN_IDS`).
pub const MAX_LOGPROB_TOKEN_IDS: usize = 128;

/// How the next token is chosen. `temperature == 0` means greedy.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    pub temperature: f32,
    /// Nucleus sampling: keep the smallest set of tokens whose probability reaches `top_p` (1 = off).
    pub top_p: f32,
    /// Keep the `top_k` most likely tokens (0 = off).
    pub top_k: usize,
    /// Drop tokens whose probability is below `min_p` times the top probability (0 = off).
    pub min_p: f32,
    /// Divides positive logits (multiplies negative ones) of tokens already seen in prompt or output (1 = off).
    pub repetition_penalty: f32,
    /// Subtracted once from the logit of every token already generated (0 = off).
    pub presence_penalty: f32,
    /// Subtracted per occurrence from the logit of every token already generated (0 = off).
    pub frequency_penalty: f32,
    /// Makes the output reproducible whatever else is in the batch. `None` draws a seed.
    pub seed: Option<u64>,
    /// Return the log-probability of each sampled token, plus this many alternatives.
    pub logprobs: Option<usize>,
    /// vLLM's `logprob_token_ids` (with `logprobs`): the alternatives returned are the sampled
    /// token and these, in this order, instead of the most likely ones (label scoring).
    pub logprob_token_ids: Option<Vec<u32>>,
    /// Added to a token's logit before anything else (OpenAI's `logit_bias`: each in
    /// [-100, 100]; -100 in effect bans the token, 100 in effect forces it).
    pub logit_bias: Vec<(u32, f32)>,
    /// vLLM's `allowed_token_ids`: only these tokens may be drawn (`None`: any).
    pub allowed_token_ids: Option<Vec<u32>>,
    /// vLLM's `thinking_token_budget`: thinking sections close after this many tokens.
    pub thinking_budget: Option<ThinkingBudget>,
    /// vLLM's `bad_words`, as token sequences: the last token of each is banned whenever the
    /// output ends with the others (a one-token sequence is always banned).
    pub bad_words: Vec<Vec<u32>>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            seed: None,
            logprobs: None,
            logit_bias: Vec::new(),
            logprob_token_ids: None,
            allowed_token_ids: None,
            thinking_budget: None,
            bad_words: Vec::new(),
        }
    }
}

impl SamplingParams {
    /// Greedy decoding: always the most likely token.
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            ..Self::default()
        }
    }

    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Checks every value once, at the edge; the sampler then trusts them.
    pub fn validate(&self) -> Result<(), EngineError> {
        let invalid =
            |field: &'static str, message: String| EngineError::InvalidRequest { field, message };
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return Err(invalid(
                "temperature",
                format!("must be a finite number >= 0, got {}", self.temperature),
            ));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(invalid(
                "top_p",
                format!("must be in (0, 1], got {}", self.top_p),
            ));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return Err(invalid(
                "min_p",
                format!("must be in [0, 1], got {}", self.min_p),
            ));
        }
        if !self.repetition_penalty.is_finite() || self.repetition_penalty <= 0.0 {
            return Err(invalid(
                "repetition_penalty",
                format!(
                    "must be a finite number > 0, got {}",
                    self.repetition_penalty
                ),
            ));
        }
        for (field, value) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ] {
            if !(-2.0..=2.0).contains(&value) {
                return Err(invalid(field, format!("must be in [-2, 2], got {value}")));
            }
        }
        if let Some(&(token_id, bias)) = self
            .logit_bias
            .iter()
            .find(|(_, bias)| !(-MAX_LOGIT_BIAS..=MAX_LOGIT_BIAS).contains(bias))
        {
            return Err(invalid(
                "logit_bias",
                format!("the bias of token {token_id} must be in [-100, 100], got {bias}"),
            ));
        }
        if self.allowed_token_ids.as_ref().is_some_and(Vec::is_empty) {
            return Err(invalid(
                "allowed_token_ids",
                "must name at least one token when given".into(),
            ));
        }
        self.validate_logprob_token_ids()?;
        if let Some(budget) = &self.thinking_budget {
            budget.validate()?;
        }
        self.validate_bad_words()
    }

    fn validate_logprob_token_ids(&self) -> Result<(), EngineError> {
        let Some(ids) = &self.logprob_token_ids else {
            return Ok(());
        };
        let invalid = |message: String| EngineError::InvalidRequest {
            field: "logprob_token_ids",
            message,
        };
        if self.logprobs.is_none() {
            return Err(invalid("needs `logprobs`".into()));
        }
        if ids.is_empty() || ids.len() > MAX_LOGPROB_TOKEN_IDS {
            return Err(invalid(format!(
                "must name 1 to {MAX_LOGPROB_TOKEN_IDS} tokens, got {}",
                ids.len()
            )));
        }
        Ok(())
    }

    fn validate_bad_words(&self) -> Result<(), EngineError> {
        let invalid = |message: String| EngineError::InvalidRequest {
            field: "bad_words",
            message,
        };
        if self.bad_words.iter().any(Vec::is_empty) {
            return Err(invalid(
                "every bad word must have at least one token".into(),
            ));
        }
        if self.bad_words.len() > MAX_NUM_BAD_WORDS {
            return Err(invalid(format!(
                "at most {MAX_NUM_BAD_WORDS} token sequences may be banned, got {}",
                self.bad_words.len()
            )));
        }
        let num_tokens: usize = self.bad_words.iter().map(Vec::len).sum();
        if num_tokens > MAX_BAD_WORDS_TOTAL_TOKENS {
            return Err(invalid(format!(
                "at most {MAX_BAD_WORDS_TOTAL_TOKENS} tokens may be banned in all, got {num_tokens}"
            )));
        }
        Ok(())
    }
}

/// When generation ends (stop *strings* are the detokenizer's job, in the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopConditions {
    /// Most tokens to generate; `None` = up to `max_model_len`.
    pub max_tokens: Option<usize>,
    /// EOS and stop token ids are ignored until this many tokens were generated.
    pub min_tokens: usize,
    /// Extra token ids that end generation (honoured even with `ignore_eos`).
    pub stop_token_ids: Vec<u32>,
    /// Keep generating past the model's EOS tokens.
    pub ignore_eos: bool,
    /// End early, with finish reason `repetition`, when the output ends in a loop (vLLM's
    /// `repetition_detection`; `None`: off).
    pub repetition: Option<RepetitionDetection>,
}

impl StopConditions {
    /// Exactly `num_tokens` tokens (EOS ignored), as benchmarks ask for.
    pub fn exact_length(num_tokens: usize) -> Self {
        Self {
            max_tokens: Some(num_tokens),
            ignore_eos: true,
            ..Self::default()
        }
    }
}

impl Default for StopConditions {
    fn default() -> Self {
        Self {
            max_tokens: Some(16),
            min_tokens: 0,
            stop_token_ids: Vec::new(),
            ignore_eos: false,
            repetition: None,
        }
    }
}

/// One generation request, in token ids.
#[derive(Debug, Clone)]
pub struct EngineRequest {
    pub id: RequestId,
    pub prompt: Vec<u32>,
    pub sampling: SamplingParams,
    pub stop: StopConditions,
    pub arrival: Instant,
    /// Requests with different salts never share cached KV blocks (tenant isolation).
    pub cache_salt: Option<String>,
    /// A grammar the output must follow (structured outputs, forced tool calls); each sequence
    /// of the request starts its own matcher.
    pub constraint: Option<Arc<dyn TokenConstraint>>,
    /// The LoRA adapter to run with (`None`: the base model). The request holds it, so an
    /// adapter unloaded meanwhile still serves it to the end.
    pub lora: Option<Arc<LoraAdapter>>,
    /// Return the log-probability of every prompt token after the first (from the model's raw
    /// logits), plus this many alternatives each; at most the engine's `max_logprobs`. The prompt is
    /// then computed in full: it takes no blocks from the prefix cache (it still fills it).
    pub prompt_logprobs: Option<usize>,
    /// What the client expects most of the output to be (OpenAI's Predicted Outputs): with
    /// prompt-lookup speculation, proposals are looked up in it first. Never changes the output;
    /// ignored by an engine that does not speculate by prompt lookup.
    pub predicted_token_ids: Option<Arc<[u32]>>,
}

impl EngineRequest {
    pub fn new(
        id: RequestId,
        prompt: Vec<u32>,
        sampling: SamplingParams,
        stop: StopConditions,
    ) -> Self {
        Self {
            id,
            prompt,
            sampling,
            stop,
            arrival: Instant::now(),
            cache_salt: None,
            constraint: None,
            lora: None,
            prompt_logprobs: None,
            predicted_token_ids: None,
        }
    }
}
