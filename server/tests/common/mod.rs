//! Shared by the integration tests: the default model's path, the tokenizer reference, and the
//! helpers that run `pagoda-server` and check it over HTTP (`server`, `api`, `prom`, `bad_inputs`,
//! `known_requests`).
#![allow(dead_code)]

pub mod api;
pub mod bad_inputs;
pub mod default_model_api;
pub mod known_requests;
pub mod prom;
pub mod reference;
pub mod server;

use std::path::PathBuf;

pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The default model: `models/` of the repository, or `$PAGODA_MODEL_DIR` (as
/// `scripts/fetch-default-model.sh` uses). Fails the test when it is missing.
pub fn model_path() -> PathBuf {
    let dir = std::env::var_os("PAGODA_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models"));
    let path = dir.join(MODEL_FILE);
    assert!(
        path.is_file(),
        "default model missing: run scripts/fetch-default-model.sh (looked for {})",
        path.display()
    );
    path
}
