//! What every choice of one request shares: the engine, the text side, the metrics and how the
//! request asked its output to be cut, named and streamed.

use std::sync::Arc;

use pagoda_engine::EngineHandle;
use pagoda_text::tokenizer::TextTokenizer;

use crate::metrics::Metrics;
use crate::openai::logprob::TokenNaming;

/// Everything one choice needs besides its engine stream.
#[derive(Debug, Clone)]
pub struct ChoiceContext {
    pub engine: EngineHandle,
    pub tokenizer: Arc<TextTokenizer>,
    pub metrics: Metrics,
    pub stop_strings: Vec<String>,
    /// Stop strings are not looked for until this many tokens were generated (`min_tokens`, as
    /// vLLM: a stop string ending within them does not stop the choice).
    pub min_tokens: usize,
    /// Tokens that end the choice (the request's `stop_token_ids`, the model's end-of-turn and,
    /// unless `ignore_eos`, EOS ids); unless `include_stop_str_in_output`, such a token adds no
    /// text, as in vLLM (also with `skip_special_tokens: false`).
    pub stop_token_ids: Vec<u32>,
    /// The request's own `stop_token_ids` (what `stop_reason` names; EOS and end of turn not).
    pub listed_stop_token_ids: Vec<u32>,
    pub include_stop_str_in_output: bool,
    pub skip_special_tokens: bool,
    pub want_logprobs: bool,
    /// How log-probabilities name tokens (`return_tokens_as_token_ids`).
    pub naming: TokenNaming,
    /// Completions' `echo` with `max_tokens: 0`: the generated token is left out.
    pub echo_only: bool,
    /// Streamed token deltas go out this many tokens at a time (1: each token; see
    /// `delta_batching`).
    pub stream_interval: usize,
}
