//! The mock engine: the real scheduler, KV block accounting, limits, stats and events, with a
//! step executor that computes nothing and streams tokens on a clock instead (time to first
//! token, time per output token, optional jitter). For load-testing what sits above the engine
//! without a model, and for measuring the serving layer's own cost.

pub mod config;
mod executor;

pub use config::{MockConfig, MockOutputLen, MockStall};
#[cfg(feature = "testing")]
pub use config::MAX_MOCK_DELAY;
pub use executor::MockExecutor;

use crate::config::EngineConfig;
use crate::error::Result;
use crate::handle::EngineHandle;
use crate::models::ModelConfig;
use crate::start::start_engine_with_executor;

/// Starts an engine that streams tokens on the mock's clock with no model compute, through the
/// same scheduler, KV block accounting (blocks sized for `model`, no KV tensors allocated),
/// admission checks, stats and events as `start_engine`. `ModelConfig::mock` makes a `model`
/// without a model file.
pub fn start_mock_engine(
    config: EngineConfig,
    model: ModelConfig,
    mock: MockConfig,
) -> Result<EngineHandle> {
    tracing::info!(
        ttft_ms = mock.ttft.as_secs_f64() * 1e3,
        tpot_ms = mock.tpot.as_secs_f64() * 1e3,
        jitter = mock.jitter,
        output_len = ?mock.output_len,
        "starting a mock engine: no model compute"
    );
    start_engine_with_executor(config, model, |info| {
        Ok(Box::new(MockExecutor::new(mock, &info.model)?))
    })
}
