//! The engine on the GPU against the engine on the CPU: the tiny test model in f32 must give
//! the same greedy tokens, through prefills, chunked prefills, prefix-cache hits and batched
//! decodes; in bf16 it must run the same workloads to the end; the GPU start-up path sizes the
//! cache from `gpu_memory_utilization`.

use candle_core::{DType, Device};
use pagoda_engine::config::ModelDType;
use pagoda_engine::models::{load_model_with, LoadOptions, WeightFormat};
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{
    start_engine, start_engine_with_model, DeviceSpec, EngineConfig, EngineHandle,
};

use crate::common::{
    greedy, random_prompts, request, run_all, tiny_model, wait_until_idle, TinyModel,
};

fn config() -> EngineConfig {
    EngineConfig {
        // Small steps: long prompts are chunked and mixed with decodes.
        max_num_batched_tokens: 64,
        max_num_seqs: 16,
        kv_cache_memory_bytes: 8 << 20,
        ..EngineConfig::default()
    }
}

fn start_on(model: &TinyModel, device: Device, dtype: ModelDType) -> EngineHandle {
    let options = LoadOptions {
        device,
        dtype,
        ..LoadOptions::cpu(WeightFormat::F32)
    };
    let loaded = load_model_with(&model.path, &options).unwrap();
    start_engine_with_model(config(), loaded).unwrap()
}

/// Random prompts, plus prompts that share long prefixes (prefix-cache hits mid-batch).
fn prompts(vocab: u32) -> Vec<Vec<u32>> {
    let mut prompts = random_prompts(12, 150, vocab, 11);
    let shared: Vec<u32> = (1..=70).map(|i| i % (vocab - 1) + 1).collect();
    for tail in 0..4u32 {
        let mut prompt = shared.clone();
        prompt.extend([tail + 1, tail + 2]);
        prompts.push(prompt);
    }
    prompts
}

fn generate(handle: &EngineHandle, prompts: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let requests = prompts
        .iter()
        .map(|p| request(handle, p.clone(), greedy(24)))
        .collect();
    let outcomes = run_all(handle, requests);
    wait_until_idle(handle);
    outcomes.iter().map(|o| o.token_ids()).collect()
}

#[test]
fn greedy_tokens_on_the_gpu_match_the_cpu_in_f32() {
    let Some(gpu) = crate::gpu() else { return };
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = prompts(spec.vocab_size as u32);
    let cpu = generate(&start_on(&model, Device::Cpu, ModelDType::F32), &prompts);
    let on_gpu = start_on(&model, gpu, ModelDType::F32);
    let first = generate(&on_gpu, &prompts);
    assert_eq!(first, cpu, "GPU f32 tokens differ from the CPU's");
    // Again on the same engine: the shared prefixes now come from the prefix cache.
    assert_eq!(
        generate(&on_gpu, &prompts),
        cpu,
        "prefix-cache hits changed the tokens"
    );
}

#[test]
fn half_precision_runs_every_step_kind() {
    let Some(gpu) = crate::gpu() else { return };
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = prompts(spec.vocab_size as u32);
    for dtype in [ModelDType::Bf16, ModelDType::F16] {
        let handle = start_on(&model, gpu.clone(), dtype);
        let outputs = generate(&handle, &prompts);
        assert!(
            outputs.iter().all(|tokens| tokens.len() == 24),
            "{dtype:?}: {outputs:?}"
        );
        assert!(outputs
            .iter()
            .flatten()
            .all(|&t| (t as usize) < spec.vocab_size));
    }
}

#[test]
fn gpu_memory_utilization_sizes_the_cache_from_a_profiled_step() {
    if crate::gpu().is_none() {
        return;
    }
    let model = tiny_model(&TinyLlamaSpec::default());
    let config = EngineConfig {
        device: DeviceSpec::Cuda(0),
        dtype: ModelDType::Bf16,
        gpu_memory_utilization: Some(0.5),
        ..EngineConfig::default()
    };
    let handle = start_engine(config, &model.path).unwrap();
    let info = handle.info().clone();
    eprintln!(
        "KV capacity at 50% of the GPU: {} tokens in {} blocks",
        info.kv_capacity_tokens, info.num_kv_blocks
    );
    // The tiny model takes ~2 KiB per token in bf16: half a GPU holds millions of tokens.
    let bytes_per_token = 2
        * info.model.num_layers
        * info.model.num_kv_heads
        * info.model.head_dim
        * DType::BF16.size_in_bytes();
    assert!(
        info.kv_capacity_tokens * bytes_per_token > 1 << 30,
        "{info:?}"
    );
    let outputs = generate(&handle, &prompts(256));
    assert!(outputs.iter().all(|tokens| tokens.len() == 24));
}
