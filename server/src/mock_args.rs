//! The mock engine's flags (`--mock` and `--mock-*`): the server without model compute, for
//! tests, benchmarks of the HTTP side and fault injection.

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct MockArgs {
    /// Replace the model with a mock engine: same scheduler, limits, API and metrics, no model
    /// compute. Uses the tokenizer of --model when given, else a built-in byte tokenizer.
    #[arg(long = "mock", env = "PAGODA_MOCK")]
    pub enabled: bool,

    /// Mock: milliseconds from a request's first scheduling to its first token.
    #[arg(long, env = "PAGODA_MOCK_TTFT_MS", default_value_t = 0.0)]
    pub mock_ttft_ms: f64,

    /// Mock: milliseconds between two tokens of a request.
    #[arg(long, env = "PAGODA_MOCK_TPOT_MS", default_value_t = 0.0)]
    pub mock_tpot_ms: f64,

    /// Mock: relative jitter on every delay (0.1 = uniformly within ±10%).
    #[arg(long, env = "PAGODA_MOCK_JITTER", default_value_t = 0.0)]
    pub mock_jitter: f64,

    /// Mock: seed of the jitter and output-length draws.
    #[arg(long, env = "PAGODA_MOCK_SEED", default_value_t = 0)]
    pub mock_seed: u64,

    /// Mock: output length — `max-tokens` (the request's), `fixed:N`, `uniform:MIN:MAX` or
    /// `normal:MEAN:STD_DEV` (capped by the request's max_tokens).
    #[arg(long, env = "PAGODA_MOCK_OUTPUT_LEN", default_value = "max-tokens")]
    pub mock_output_len: String,

    /// Mock fault injection: an engine step in which a request would produce its token number
    /// N + 1 fails, ending every request of that step with an error (as a crashing model would).
    /// [default: off]
    #[arg(long, env = "PAGODA_MOCK_FAIL_AFTER_TOKENS", value_name = "N")]
    pub mock_fail_after_tokens: Option<usize>,

    /// Mock fault injection: the first engine step in which a request would produce its token
    /// number N + 1 blocks for --mock-stall-ms (a stuck model, for the stall watchdog).
    /// [default: off]
    #[arg(long, env = "PAGODA_MOCK_STALL_AFTER_TOKENS", value_name = "N")]
    pub mock_stall_after_tokens: Option<usize>,

    /// Mock: how long the injected stall lasts, in milliseconds.
    #[arg(long, env = "PAGODA_MOCK_STALL_MS", default_value_t = 5000.0)]
    pub mock_stall_ms: f64,
}
