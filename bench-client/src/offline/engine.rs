//! The engine the offline commands (`latency`, `throughput`) start in this process, from the
//! engine flags every binary shares (`pagoda_engine::EngineArgs`).

use std::path::Path;

use anyhow::Context;
use pagoda_engine::{start_engine, EngineArgs, EngineHandle};

/// An engine running in this process; shut down when dropped.
#[derive(Debug)]
pub struct InProcessEngine {
    pub handle: EngineHandle,
}

impl InProcessEngine {
    /// Loads `model_path` and starts the engine (blocking: call it off the async threads).
    pub fn start(args: &EngineArgs, model_path: &Path) -> anyhow::Result<Self> {
        let handle = start_engine(args.engine_config()?, model_path)
            .with_context(|| format!("cannot start the engine on {}", model_path.display()))?;
        Ok(Self { handle })
    }
}

impl Drop for InProcessEngine {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

/// Starts the engine on a blocking thread (loading weights takes a while).
pub async fn start_in_background(
    args: &EngineArgs,
    model_path: &Path,
) -> anyhow::Result<InProcessEngine> {
    let (args, path) = (args.clone(), model_path.to_path_buf());
    tokio::task::spawn_blocking(move || InProcessEngine::start(&args, &path)).await?
}
