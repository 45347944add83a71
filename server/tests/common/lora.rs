//! Random LoRA adapters in the default model's shape (`pagoda_engine::testing::TinyLoraSpec`,
//! the PEFT layout `scripts/make-lora-adapter.py` writes), and the flags that serve them.

use std::path::{Path, PathBuf};

use pagoda_engine::models::ModelConfig;
use pagoda_engine::testing::TinyLoraSpec;

/// The default model's shape (SmolLM2-135M: `ModelConfig::mock` is that shape), all an
/// adapter's files depend on.
fn default_model_config() -> ModelConfig {
    ModelConfig::mock(49_152, vec![], 2048)
}

/// Writes `seeds.len()` adapters named `a0`, `a1`, … under `dir`.
pub fn write_adapters(dir: &Path, seeds: &[u64]) -> Vec<(String, PathBuf)> {
    let config = default_model_config();
    seeds
        .iter()
        .enumerate()
        .map(|(i, &seed)| {
            let path = dir.join(format!("a{i}"));
            let spec = TinyLoraSpec {
                rank: 8,
                alpha: 16.0,
                seed,
                b_scale: 0.08,
                ..TinyLoraSpec::default()
            };
            spec.write(&config, &path)
                .expect("a random adapter is written");
            (format!("a{i}"), path)
        })
        .collect()
}

/// `--lora-modules name=path …` for `adapters`.
pub fn module_args(adapters: &[(String, PathBuf)]) -> Vec<String> {
    let mut args = vec!["--lora-modules".to_string()];
    args.extend(
        adapters
            .iter()
            .map(|(name, path)| format!("{name}={}", path.display())),
    );
    args
}
