//! Pagoda's engine: continuous batching over a paged KV cache. Works in token ids; knows no HTTP.
//!
//! Start one with [`start_engine`], then drive it through the [`EngineHandle`] it returns;
//! [`start_mock_engine`] starts the same engine with no model, streaming tokens on a clock.

/// Declares modules that are the engine's own business: public with the `testing` feature (for
/// the engine's tests, examples and benchmarks, which reach into the scheduler, the KV cache and
/// the runner), crate-private otherwise, so the public API stays the handle, the configuration, the
/// request, event and error types, and model loading.
macro_rules! internal_modules {
    ($($(#[$meta:meta])* mod $name:ident;)*) => {$(
        $(#[$meta])* #[cfg(feature = "testing")] pub mod $name;
        $(#[$meta])* #[cfg(not(feature = "testing"))] pub(crate) mod $name;
    )*};
}

pub mod args;
pub mod config;
pub mod constraint;
mod core;
pub mod cpu_threads;
pub mod device;
pub mod error;
pub mod events;
mod fast_math;
pub mod handle;
mod kv_cache_dtype;
pub mod lora;
pub mod models;
mod repetition;
pub mod request;
pub mod spec_decode;
pub mod step_tokens;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod thinking;
pub mod validate;

internal_modules! {
    mod attention;
    mod batch;
    #[cfg(feature = "cuda")]
    mod gpu;
    mod kv;
    mod mock;
    mod prompt_logprobs;
    mod runner;
    mod sampling;
    mod scheduler;
    mod sequence;
    mod start;
}

pub use args::EngineArgs;
pub use config::{EngineConfig, ItlTarget};
pub use constraint::{ConstraintError, ConstraintMatcher, TokenConstraint, TokenMask};
pub use device::DeviceSpec;
pub use error::{EngineError, Result};
pub use events::{
    FinishReason, GeneratedToken, PromptTokenLogprob, RequestTimings, SpecDecodeUsage, TokenEvent,
    Usage,
};
pub use handle::{EngineHandle, EngineInfo, EngineStats, RequestStream};
pub use kv::events::{KvCacheEvent, KvEventBatch, StoredBlocks, StoredLora};
pub use kv::hash::BlockHash;
pub use lora::{LoraAdapter, LoraId};
pub use mock::{start_mock_engine, MockConfig, MockOutputLen, MockStall};
pub use request::{
    EngineRequest, RepetitionDetection, RequestId, SamplingParams, StopConditions, ThinkingBudget,
    MAX_BAD_WORDS_TOTAL_TOKENS, MAX_LOGPROB_TOKEN_IDS, MAX_NUM_BAD_WORDS,
};
pub use spec_decode::{SpecDecodeCounters, SpeculativeConfig};
pub use start::start_engine;
#[cfg(feature = "testing")]
pub use start::{start_engine_with_executor, start_engine_with_model, start_engine_with_models};
pub use validate::ValidRequest;
