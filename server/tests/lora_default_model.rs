//! A LoRA adapter (rank 16, all seven projections) on the default model's GGUF equals the default
//! model with the adapter merged into its weights (`W + scale·B·A`, computed by the test
//! fixture on the Hugging Face conversion of the GGUF): last-token logits within 1e-4 and the
//! same greedy tokens. Both run with f32 weights, so the comparison is exact up to rounding;
//! the GGUF's q/k rows are in llama.cpp's order, so this also checks that the adapter's are
//! reordered to match.
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`. The converted
//! directory (~540 MB of f32 weights) is a temporary directory.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use pagoda_engine::config::LoraLimits;
use pagoda_engine::models::{ModelConfig, WeightFormat};
use pagoda_engine::testing::{
    convert_gguf_to_hf, last_token_logits, lora_last_token_logits, write_merged_hf_dir,
    TinyLoraSpec,
};
use pagoda_engine::{
    start_engine, EngineConfig, EngineRequest, LoraAdapter, SamplingParams, StopConditions,
    TokenEvent,
};

const TOLERANCE: f32 = 1e-4;

fn engine_config(lora: bool) -> EngineConfig {
    EngineConfig {
        weight_format: WeightFormat::F32,
        kv_cache_memory_bytes: Some(64 << 20),
        max_model_len: Some(1024),
        lora: lora.then_some(LoraLimits {
            max_loras: 1,
            max_lora_rank: 16,
        }),
        ..EngineConfig::default()
    }
}

fn greedy_tokens(
    handle: &pagoda_engine::EngineHandle,
    prompt: &[u32],
    lora: Option<Arc<LoraAdapter>>,
) -> Vec<u32> {
    let stop = StopConditions {
        max_tokens: Some(16),
        ignore_eos: true,
        ..StopConditions::default()
    };
    let mut request = EngineRequest::new(
        handle.next_request_id(),
        prompt.to_vec(),
        SamplingParams::greedy(),
        stop,
    );
    request.lora = lora;
    let mut stream = handle.submit(handle.validate(request).unwrap()).unwrap();
    let mut tokens = Vec::new();
    loop {
        match stream.blocking_next().unwrap() {
            TokenEvent::Token(token) => tokens.push(token.token_id),
            TokenEvent::Finished { .. } => return tokens,
            TokenEvent::Error(e) => panic!("{e}"),
            TokenEvent::PromptLogprobs(_) => panic!("prompt log-probabilities were not asked for"),
        }
    }
}

#[test]
fn an_adapter_on_the_default_model_equals_its_merged_weights() {
    let gguf = common::model_path();
    let dir = tempfile::tempdir().unwrap();
    let (hf, adapter) = (dir.path().join("merged"), dir.path().join("adapter"));
    convert_gguf_to_hf(&gguf, &hf).unwrap();
    let config = ModelConfig::mock(49_152, vec![], 2048);
    let lora = TinyLoraSpec {
        rank: 16,
        alpha: 32.0,
        b_scale: 0.05,
        seed: 3,
        ..TinyLoraSpec::default()
    };
    lora.write(&config, &adapter).unwrap();
    let plain_prompt: Vec<u32> = (0..24).map(|i| 300 + i * 97).collect();
    let plain = last_token_logits(&hf, WeightFormat::F32, &plain_prompt).unwrap();
    write_merged_hf_dir(&hf, &lora, &config, &hf).unwrap();
    for prompt in [
        plain_prompt.clone(),
        (0..40).map(|i| 1000 + i * 13).collect(),
    ] {
        let merged = last_token_logits(&hf, WeightFormat::F32, &prompt).unwrap();
        let with_adapter =
            lora_last_token_logits(&gguf, WeightFormat::F32, &adapter, &prompt).unwrap();
        let diff = merged
            .iter()
            .zip(&with_adapter)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(diff < TOLERANCE, "logits differ by {diff}");
        if prompt == plain_prompt {
            let moved = plain
                .iter()
                .zip(&merged)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(moved > 0.1, "the adapter moves the logits (by {moved})");
        }
    }

    let base = start_engine(engine_config(true), &gguf).unwrap();
    let loaded = base.load_lora_adapter("adapter", &adapter).unwrap();
    let merged = start_engine(engine_config(false), &hf).unwrap();
    assert_eq!(
        greedy_tokens(&base, &plain_prompt, Some(loaded)),
        greedy_tokens(&merged, &plain_prompt, None)
    );
    base.shutdown();
    merged.shutdown();
}
