//! Shared by the offline tests: a tiny random model served by a real engine.
#![allow(clippy::unwrap_used)]

use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{start_engine, EngineConfig, EngineHandle};

/// A tiny random model's engine; the model file lives as long as this value.
pub struct TinyEngine {
    _dir: tempfile::TempDir,
    pub handle: EngineHandle,
}

impl Drop for TinyEngine {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

pub fn tiny_engine() -> TinyEngine {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    TinyLlamaSpec::default().write_gguf(&path).unwrap();
    let config = EngineConfig {
        max_model_len: Some(256),
        kv_cache_memory_bytes: Some(16 << 20),
        ..EngineConfig::default()
    };
    let handle = start_engine(config, &path).unwrap();
    TinyEngine { _dir: dir, handle }
}
