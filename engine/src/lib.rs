//! Pagoda's engine: continuous batching over a paged KV cache. Works in token ids; knows no HTTP.
//!
//! Start one with [`start_engine`], then drive it through the [`EngineHandle`] it returns.

pub mod attention;
pub mod batch;
pub mod config;
pub mod core;
pub mod error;
pub mod events;
pub mod handle;
pub mod kv;
pub mod models;
pub mod request;
pub mod runner;
pub mod sampling;
pub mod scheduler;
pub mod sequence;
pub mod testing;
pub mod validate;

pub use crate::core::{start_engine, start_engine_with_model};
pub use config::EngineConfig;
pub use error::{EngineError, Result};
pub use events::{FinishReason, GeneratedToken, RequestTimings, TokenEvent, Usage};
pub use handle::{EngineHandle, EngineInfo, EngineStats, RequestStream};
pub use request::{EngineRequest, RequestId, SamplingParams, StopConditions};
