//! The sampling defaults a request without its own values gets: vLLM's `--generation-config`
//! (`auto`: the model's `generation_config.json`; `vllm`: none, the server's own defaults; a
//! directory: that directory's `generation_config.json`) and `--override-generation-config`
//! (a JSON object of values laid over them).

use std::path::Path;

use anyhow::{bail, Context};
use clap::Args;
use pagoda_engine::models::generation_config::{read_generation_config, SamplingDefaults};
use serde_json::Value;

/// The keys `--override-generation-config` may set (what the server applies of the file).
const OVERRIDE_KEYS: [&str; 6] = [
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "max_new_tokens",
];

/// How the model's defaults and the server's settings apply to requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamDefaults {
    pub sampling: SamplingDefaults,
    /// Token ids that end a turn besides the model's EOS (chat templates' end-of-turn tokens).
    pub extra_stop_token_ids: Vec<u32>,
    /// The model's EOS ids (they end a choice unless `ignore_eos`).
    pub eos_token_ids: Vec<u32>,
    /// Log-probabilities name tokens `token_id:{id}` unless a request says otherwise
    /// (`--return-tokens-as-token-ids`).
    pub tokens_as_ids: bool,
    /// Streamed token deltas go out this many tokens at a time at least (`--stream-interval`).
    pub stream_interval: usize,
    /// Every stream ends with a usage chunk, asked for or not (vLLM's
    /// `--enable-force-include-usage`).
    pub force_include_usage: bool,
}

#[derive(Debug, Clone, Args)]
pub struct GenerationConfigArgs {
    /// Where requests' default sampling values come from: `auto` (the model's
    /// generation_config.json), `vllm` (none: temperature 1, no top-k/top-p/min-p/penalty, no
    /// default max_tokens), or a directory holding a generation_config.json.
    #[arg(long, value_name = "auto|vllm|DIR", default_value = "auto")]
    pub generation_config: String,
    /// A JSON object laid over those defaults, e.g. '{"temperature": 0.6, "top_p": 0.95}'
    /// (keys: temperature, top_p, top_k, min_p, repetition_penalty, max_new_tokens).
    #[arg(long, value_name = "JSON")]
    pub override_generation_config: Option<String>,
}

impl GenerationConfigArgs {
    /// The defaults requests get, given the model's own.
    pub fn sampling_defaults(&self, model: SamplingDefaults) -> anyhow::Result<SamplingDefaults> {
        let base = match self.generation_config.as_str() {
            "auto" => model,
            "vllm" => SamplingDefaults::default(),
            dir => {
                let path = Path::new(dir).join("generation_config.json");
                if !path.is_file() {
                    bail!("--generation-config {dir}: no generation_config.json there");
                }
                read_generation_config(&path).sampling
            }
        };
        match &self.override_generation_config {
            None => Ok(base),
            Some(text) => Ok(laid_over(base, parse_override(text)?)),
        }
    }

    /// Checks the flags before the model loads.
    pub fn check(&self) -> anyhow::Result<()> {
        self.sampling_defaults(SamplingDefaults::default())
            .map(|_| ())
    }
}

/// `--override-generation-config`: an object of known keys with values of the right kind.
fn parse_override(text: &str) -> anyhow::Result<SamplingDefaults> {
    let value: Value = serde_json::from_str(text)
        .with_context(|| format!("--override-generation-config {text:?} is not JSON"))?;
    let Some(object) = value.as_object() else {
        bail!("--override-generation-config must be a JSON object, got {text:?}");
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !OVERRIDE_KEYS.contains(&key.as_str()))
    {
        bail!(
            "--override-generation-config: unknown key {unknown:?} (known: {})",
            OVERRIDE_KEYS.join(", ")
        );
    }
    serde_json::from_value(value).with_context(|| {
        format!("--override-generation-config {text:?}: a value of the wrong kind")
    })
}

/// `base` with every value `over` sets.
fn laid_over(base: SamplingDefaults, over: SamplingDefaults) -> SamplingDefaults {
    SamplingDefaults {
        temperature: over.temperature.or(base.temperature),
        top_p: over.top_p.or(base.top_p),
        top_k: over.top_k.or(base.top_k),
        min_p: over.min_p.or(base.min_p),
        repetition_penalty: over.repetition_penalty.or(base.repetition_penalty),
        max_new_tokens: over.max_new_tokens.or(base.max_new_tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(source: &str, over: Option<&str>) -> GenerationConfigArgs {
        GenerationConfigArgs {
            generation_config: source.to_string(),
            override_generation_config: over.map(str::to_string),
        }
    }

    fn model() -> SamplingDefaults {
        SamplingDefaults {
            temperature: Some(0.6),
            top_p: Some(0.9),
            max_new_tokens: Some(512),
            ..SamplingDefaults::default()
        }
    }

    #[test]
    fn the_models_defaults_none_or_a_directorys_with_overrides_laid_over() {
        assert_eq!(
            args("auto", None).sampling_defaults(model()).expect("ok"),
            model()
        );
        assert_eq!(
            args("vllm", None).sampling_defaults(model()).expect("ok"),
            SamplingDefaults::default()
        );
        let over = args("auto", Some(r#"{"temperature": 0.2, "top_k": 40}"#));
        let laid = over.sampling_defaults(model()).expect("ok");
        assert_eq!(laid.temperature, Some(0.2));
        assert_eq!(laid.top_k, Some(40));
        assert_eq!(laid.top_p, Some(0.9), "kept from the model");
        let dir = tempfile::tempdir().expect("a directory");
        std::fs::write(
            dir.path().join("generation_config.json"),
            r#"{"temperature": 0.3, "repetition_penalty": 1.1}"#,
        )
        .expect("writes");
        let from_dir = args(dir.path().to_str().expect("utf-8"), None);
        let read = from_dir.sampling_defaults(model()).expect("ok");
        assert_eq!(read.temperature, Some(0.3));
        assert_eq!(read.repetition_penalty, Some(1.1));
        assert_eq!(read.top_p, None, "the directory's, not the model's");
    }

    #[test]
    fn bad_flags_are_refused_with_the_reason() {
        let cases = [
            args("/nonexistent", None),
            args("auto", Some("[1]")),
            args("auto", Some("{\"temprature\": 0.5}")),
            args("auto", Some("{\"top_k\": \"many\"}")),
            args("auto", Some("not json")),
        ];
        for case in cases {
            assert!(case.check().is_err(), "{case:?}");
        }
        assert!(args("vllm", Some("{\"max_new_tokens\": 64}"))
            .check()
            .is_ok());
    }
}
