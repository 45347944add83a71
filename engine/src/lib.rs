//! Pagoda's engine: continuous batching over a paged KV cache. Works in token ids; knows no HTTP.
//!
//! Start one with [`start_engine`], then drive it through the [`EngineHandle`] it returns;
//! [`start_mock_engine`] starts the same engine with no model, streaming tokens on a clock.

pub mod args;
pub mod attention;
pub mod batch;
pub mod config;
mod core;
pub mod device;
pub mod error;
pub mod events;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod handle;
pub mod kv;
pub mod mock;
pub mod models;
pub mod request;
pub mod runner;
pub mod sampling;
pub mod scheduler;
pub mod sequence;
pub mod start;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod validate;

pub use args::EngineArgs;
pub use config::EngineConfig;
pub use device::DeviceSpec;
pub use error::{EngineError, Result};
pub use events::{FinishReason, GeneratedToken, RequestTimings, TokenEvent, Usage};
pub use handle::{EngineHandle, EngineInfo, EngineStats, RequestStream};
pub use mock::{start_mock_engine, MockConfig, MockOutputLen, MockStall};
pub use request::{EngineRequest, RequestId, SamplingParams, StopConditions};
pub use start::{start_engine, start_engine_with_executor, start_engine_with_model};
pub use validate::ValidRequest;
