//! LoRA adapters against the base model with the adapter merged into its weights
//! (`W + scale·B·A`, computed by the test fixture, not by the engine's LoRA code): every family,
//! on Hugging Face and GGUF bases (f32 exactly; int8 and quantized GGUF blocks within their
//! quantization error); mixed batches of adapters and the base, also under speculative decoding;
//! `max_loras`; and prefix caching that never shares blocks between adapters.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::quantized::GgmlDType;
use candle_core::Device;
use common::{greedy, request, run_all, run_one};
use pagoda_engine::config::LoraLimits;
use pagoda_engine::models::{load_model, ModelConfig, WeightFormat};
use pagoda_engine::spec_decode::{DraftModelConfig, NgramConfig, SpeculativeMethod};
use pagoda_engine::testing::{
    convert_gguf_to_hf, last_token_logits, lora_last_token_logits, write_merged_hf_dir, Family,
    TinyHfSpec, TinyLlamaSpec, TinyLoraSpec,
};
use pagoda_engine::{
    start_engine, EngineConfig, EngineError, EngineHandle, LoraAdapter, SpecDecodeCounters,
    SpeculativeConfig,
};

/// f32 arithmetic in two association orders (`(W + sBA)x` against `Wx + s·B(Ax)`).
const TOLERANCE: f32 = 1e-4;
/// int8 and 8-bit GGUF weights move these logits by at most this (tests of the base model
/// measured 0.07–0.18); a missing or misplaced adapter moves them by far more.
const QUANTIZED_TOLERANCE: f32 = 0.3;
const PROMPT: [u32; 21] = [
    5, 17, 3, 44, 9, 28, 61, 2, 33, 7, 50, 12, 19, 40, 8, 26, 55, 1, 37, 14, 22,
];

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn config_of(path: &Path) -> ModelConfig {
    load_model(path, &Device::Cpu, WeightFormat::F32)
        .unwrap()
        .config()
        .clone()
}

fn write_merged(base_hf: &Path, lora: &TinyLoraSpec, config: &ModelConfig, out: &Path) {
    write_merged_hf_dir(base_hf, lora, config, out).unwrap();
}

fn lora_engine(path: &Path, max_loras: usize) -> EngineHandle {
    let config = EngineConfig {
        kv_cache_memory_bytes: Some(8 << 20),
        block_size: 4,
        lora: Some(LoraLimits {
            max_loras,
            max_lora_rank: 16,
        }),
        ..EngineConfig::default()
    };
    start_engine(config, path).unwrap()
}

fn generate(handle: &EngineHandle, adapter: Option<&Arc<LoraAdapter>>, prompt: &[u32]) -> Vec<u32> {
    let mut req = request(handle, prompt.to_vec(), greedy(12));
    req.lora = adapter.cloned();
    run_one(handle, req).token_ids()
}

#[test]
fn every_family_matches_its_merged_weights() {
    for family in [Family::Llama, Family::Mistral, Family::Qwen2, Family::Qwen3] {
        let dir = tempfile::tempdir().unwrap();
        let (base, adapter, merged) = (
            dir.path().join("base"),
            dir.path().join("adapter"),
            dir.path().join("merged"),
        );
        TinyHfSpec::for_family(family).write(&base).unwrap();
        let config = config_of(&base);
        let lora = TinyLoraSpec::default();
        lora.write(&config, &adapter).unwrap();
        write_merged(&base, &lora, &config, &merged);
        let prompt = &PROMPT[..PROMPT.len().min(config.vocab_size)];
        let with_adapter =
            lora_last_token_logits(&base, WeightFormat::F32, &adapter, prompt).unwrap();
        let reference = last_token_logits(&merged, WeightFormat::F32, prompt).unwrap();
        let plain = last_token_logits(&base, WeightFormat::F32, prompt).unwrap();
        assert!(
            max_diff(&with_adapter, &reference) < TOLERANCE,
            "{family:?}"
        );
        assert!(
            max_diff(&plain, &reference) > 100.0 * TOLERANCE,
            "{family:?}: the adapter matters"
        );

        let handle = lora_engine(&base, 1);
        let loaded = handle.load_lora_adapter("a", &adapter).unwrap();
        let merged_engine = lora_engine(&merged, 1);
        assert_eq!(
            generate(&handle, Some(&loaded), prompt),
            generate(&merged_engine, None, prompt),
            "{family:?}: greedy tokens"
        );
        handle.shutdown();
        merged_engine.shutdown();
    }
}

/// A tiny GGUF Llama (q/k rows in llama.cpp's order), its Hugging Face conversion, an adapter in
/// Hugging Face's layout and the merged Hugging Face reference.
struct GgufCase {
    _dir: tempfile::TempDir,
    gguf: PathBuf,
    adapter: PathBuf,
    merged: PathBuf,
}

fn gguf_case(dtype: GgmlDType) -> GgufCase {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("tiny.gguf");
    let spec = TinyLlamaSpec {
        dtype,
        vocab_size: 64,
        ..TinyLlamaSpec::default()
    };
    spec.write_gguf(&gguf).unwrap();
    let hf = dir.path().join("hf");
    convert_gguf_to_hf(&gguf, &hf).unwrap();
    let config = config_of(&hf);
    let lora = TinyLoraSpec {
        rank: 8,
        alpha: 16.0,
        use_rslora: true,
        ..TinyLoraSpec::default()
    };
    let adapter = dir.path().join("adapter");
    lora.write(&config, &adapter).unwrap();
    let merged = dir.path().join("merged");
    write_merged(&hf, &lora, &config, &merged);
    GgufCase {
        _dir: dir,
        gguf,
        adapter,
        merged,
    }
}

#[test]
fn gguf_bases_take_hugging_face_adapters() {
    let case = gguf_case(GgmlDType::F32);
    let prompt = &PROMPT[..];
    let reference = last_token_logits(&case.merged, WeightFormat::F32, prompt).unwrap();
    let exact =
        lora_last_token_logits(&case.gguf, WeightFormat::F32, &case.adapter, prompt).unwrap();
    assert!(max_diff(&exact, &reference) < TOLERANCE);
    let int8 =
        lora_last_token_logits(&case.gguf, WeightFormat::Int8, &case.adapter, prompt).unwrap();
    assert!(max_diff(&int8, &reference) < QUANTIZED_TOLERANCE);
    // What `auto` picks on a CPU with VNNI (its plain Rust twin elsewhere).
    let vnni15 =
        lora_last_token_logits(&case.gguf, WeightFormat::Vnni15, &case.adapter, prompt).unwrap();
    assert!(max_diff(&vnni15, &reference) < QUANTIZED_TOLERANCE);

    let quantized = gguf_case(GgmlDType::Q8_0);
    let reference = last_token_logits(&quantized.merged, WeightFormat::F32, prompt).unwrap();
    let plain = last_token_logits(&quantized.gguf, WeightFormat::Native, prompt).unwrap();
    let native = lora_last_token_logits(
        &quantized.gguf,
        WeightFormat::Native,
        &quantized.adapter,
        prompt,
    )
    .unwrap();
    assert!(max_diff(&native, &reference) < QUANTIZED_TOLERANCE);
    assert!(
        max_diff(&plain, &reference) > 2.0 * QUANTIZED_TOLERANCE,
        "the adapter matters"
    );
}

/// Three adapters and the base, in one batch and alone.
/// Three adapters written for `case`'s model and loaded into `handle`.
fn load_adapters(case: &GgufCase, handle: &EngineHandle) -> Vec<Arc<LoraAdapter>> {
    let config = handle.info().model.clone();
    (0..3)
        .map(|i| {
            let dir = case._dir.path().join(format!("adapter-{i}"));
            let lora = TinyLoraSpec {
                seed: 100 + i,
                b_scale: 0.1,
                ..TinyLoraSpec::default()
            };
            lora.write(&config, &dir).unwrap();
            handle.load_lora_adapter(&format!("a{i}"), &dir).unwrap()
        })
        .collect()
}

/// Eight prompts, of which the `i`-th runs with adapter `i % 4` (3: the base).
fn mixed_prompts() -> Vec<Vec<u32>> {
    (0..8)
        .map(|i| PROMPT[i..PROMPT.len() - i % 3].to_vec())
        .collect()
}

fn mixed_batch_matches_alone(max_loras: usize) {
    let case = gguf_case(GgmlDType::F32);
    let handle = lora_engine(&case.gguf, max_loras);
    let adapters = load_adapters(&case, &handle);
    let prompts = mixed_prompts();
    let choice = |i: usize| (i % 4 < 3).then(|| &adapters[i % 4]);
    let alone: Vec<Vec<u32>> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| generate(&handle, choice(i), p))
        .collect();
    let together: Vec<_> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut req = request(&handle, p.clone(), greedy(12));
            req.lora = choice(i).cloned();
            req
        })
        .collect();
    let outcomes = run_all(&handle, together);
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(
            outcome.token_ids(),
            alone[i],
            "request {i} (max_loras {max_loras})"
        );
    }
    let distinct: std::collections::HashSet<_> = alone.iter().collect();
    assert!(distinct.len() >= 4, "the adapters change the outputs");
    handle.shutdown();
}

#[test]
fn a_batch_mixing_adapters_and_the_base_gives_each_request_its_own_output() {
    mixed_batch_matches_alone(3);
}

#[test]
fn max_loras_one_serves_every_adapter_in_turn() {
    mixed_batch_matches_alone(1);
}

#[test]
fn adapters_never_share_cached_prefixes() {
    let case = gguf_case(GgmlDType::F32);
    let handle = lora_engine(&case.gguf, 2);
    let a = handle.load_lora_adapter("a", &case.adapter).unwrap();
    let b = handle.load_lora_adapter("b", &case.adapter).unwrap();
    let hits = || handle.stats().prefix_cache_hits_tokens_total;
    let prompt = &PROMPT[..];
    generate(&handle, Some(&a), prompt);
    let after_first = hits();
    generate(&handle, Some(&b), prompt);
    assert_eq!(hits(), after_first, "b never reads a's blocks");
    generate(&handle, None, prompt);
    assert_eq!(
        hits(),
        after_first,
        "the base never reads an adapter's blocks"
    );
    generate(&handle, Some(&a), prompt);
    assert_eq!(hits(), after_first + 20, "a reads its own five full blocks");
    handle.shutdown();
}

#[test]
fn adapters_need_lora_enabled() {
    let case = gguf_case(GgmlDType::F32);
    let plain = start_engine(
        EngineConfig {
            kv_cache_memory_bytes: Some(8 << 20),
            ..EngineConfig::default()
        },
        &case.gguf,
    )
    .unwrap();
    assert!(!plain.serves_lora());
    let error = plain.load_lora_adapter("a", &case.adapter).unwrap_err();
    assert!(matches!(error, EngineError::Adapter(_)), "{error}");
    let enabled = lora_engine(&case.gguf, 1);
    let adapter = enabled.load_lora_adapter("a", &case.adapter).unwrap();
    let mut req = request(&plain, PROMPT.to_vec(), greedy(2));
    req.lora = Some(adapter);
    let refused = plain.validate(req).unwrap_err();
    assert!(matches!(
        refused,
        EngineError::InvalidRequest { field: "model", .. }
    ));
    plain.shutdown();
    enabled.shutdown();
}

/// The mixed batch's outputs on an engine speculating as `speculative` (`None`: not at all),
/// and its speculative-decoding counters.
fn speculating_mixed_batch(
    case: &GgufCase,
    speculative: Option<SpeculativeConfig>,
) -> (Vec<Vec<u32>>, Option<SpecDecodeCounters>) {
    let config = EngineConfig {
        kv_cache_memory_bytes: Some(8 << 20),
        block_size: 4,
        lora: Some(LoraLimits {
            max_loras: 3,
            max_lora_rank: 16,
        }),
        speculative,
        ..EngineConfig::default()
    };
    let handle = start_engine(config, &case.gguf).unwrap();
    let adapters = load_adapters(case, &handle);
    let requests = mixed_prompts()
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let mut req = request(&handle, p, greedy(12));
            req.lora = (i % 4 < 3).then(|| adapters[i % 4].clone());
            req
        })
        .collect();
    let outputs = run_all(&handle, requests)
        .iter()
        .map(|o| o.token_ids())
        .collect();
    common::wait_until_idle(&handle);
    let counters = handle.stats().spec_decode;
    handle.shutdown();
    (outputs, counters)
}

/// With speculative decoding, each request is verified with its own adapter (a draft model
/// proposes with the base weights alone), so every output is the one without speculation.
#[test]
fn speculative_decoding_keeps_each_adapters_output() {
    let case = gguf_case(GgmlDType::F32);
    let (expected, _) = speculating_mixed_batch(&case, None);
    let ngram = SpeculativeConfig {
        method: SpeculativeMethod::Ngram(NgramConfig {
            prompt_lookup_min: 1,
            prompt_lookup_max: 3,
        }),
        num_speculative_tokens: 3,
        disable_by_batch_size: None,
    };
    let draft = SpeculativeConfig {
        method: SpeculativeMethod::DraftModel(DraftModelConfig {
            model: case.gguf.clone(),
        }),
        num_speculative_tokens: 3,
        disable_by_batch_size: None,
    };
    for speculative in [ngram, draft] {
        let name = speculative.method.name();
        let (outputs, counters) = speculating_mixed_batch(&case, Some(speculative));
        assert_eq!(outputs, expected, "{name}");
        let counters = counters.expect("counters");
        assert!(counters.num_accepted_tokens > 0, "{name}: {counters:?}");
    }
}
