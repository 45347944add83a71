//! Shared by the integration tests: the default model's path, the tokenizer reference, and the
//! helpers that run `pagoda-server` and check it over HTTP (`server`, `api`, `prom`, `bad_inputs`,
//! `known_requests`).
#![allow(dead_code)]

pub mod api;
pub mod bad_inputs;
pub mod default_model_api;
pub mod known_requests;
pub mod lora;
pub mod prom;
pub mod python;
pub mod reference;
pub mod server;

use std::path::PathBuf;

/// The default model: `models/` of the repository, or `$PAGODA_MODEL_DIR` (as
/// `scripts/fetch-default-model.sh` uses). Fails the test when it is missing.
pub fn model_path() -> PathBuf {
    pagoda_e2e::tools::default_model()
}
