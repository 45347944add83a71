//! The engine on the GPU against the engine on the CPU: the tiny test model in f32 must give
//! the same greedy tokens, through prefills, chunked prefills, prefix-cache hits and batched
//! decodes; in bf16 and f16 a prefill's logits must stay within a few percent of the CPU's f32
//! ones and the same workloads must run to the end; the GPU start-up path sizes the cache from
//! `gpu_memory_utilization`.

use candle_core::{DType, Device};
use pagoda_engine::attention::cuda::CudaKvCache;
use pagoda_engine::attention::{CpuKvCache, PagedKvCache};
use pagoda_engine::config::{KvCacheDType, ModelDType};
use pagoda_engine::models::{load_model_with, LoadOptions, WeightFormat};
use pagoda_engine::runner::ModelRunner;
use pagoda_engine::testing::{prefill_plan, TinyLlamaSpec};
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
        kv_cache_memory_bytes: Some(8 << 20),
        ..EngineConfig::default()
    }
}

fn start_on(model: &TinyModel, device: Device, dtype: ModelDType) -> EngineHandle {
    // The CPU engine is the f32 reference: its KV cache in f32 too (the CPU's default is f16);
    // on the GPU the cache follows the compute dtype.
    let kv_cache_dtype = if device.is_cpu() {
        KvCacheDType::F32
    } else {
        KvCacheDType::Auto
    };
    let options = LoadOptions {
        device,
        dtype,
        ..LoadOptions::cpu(WeightFormat::F32)
    };
    let loaded = load_model_with(&model.path, &options).unwrap();
    let config = EngineConfig {
        kv_cache_dtype,
        ..config()
    };
    start_engine_with_model(config, loaded).unwrap()
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

/// The last token's logits of one prefill of `prompt` on `device` in `dtype`.
fn prefill_logits(
    model: &TinyModel,
    device: &Device,
    dtype: ModelDType,
    prompt: &[u32],
) -> Vec<f32> {
    const BLOCK_SIZE: usize = 16;
    let options = LoadOptions {
        device: device.clone(),
        dtype,
        ..LoadOptions::cpu(WeightFormat::F32)
    };
    let loaded = load_model_with(&model.path, &options).unwrap();
    let config = loaded.config().clone();
    let num_blocks = prompt.len().div_ceil(BLOCK_SIZE);
    let cache: Box<dyn PagedKvCache> = if device.is_cuda() {
        let cache = CudaKvCache::new(
            device,
            loaded.dtype(),
            config.num_layers,
            config.attn_shape(),
            BLOCK_SIZE,
            num_blocks,
        );
        Box::new(cache.unwrap())
    } else {
        let shape = config.attn_shape();
        Box::new(CpuKvCache::new(
            config.num_layers,
            shape,
            BLOCK_SIZE,
            num_blocks,
        ))
    };
    let mut runner = ModelRunner::new(loaded, cache, BLOCK_SIZE);
    let plan = prefill_plan(prompt, BLOCK_SIZE, None);
    runner.execute(&plan).unwrap().values
}

/// ‖a − b‖ / ‖b‖.
fn relative_error(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let difference: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
    (difference / norm).sqrt()
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
    // Values: a prefill's last logits against the CPU in f32 (bf16 keeps 8 bits of mantissa,
    // f16 11; through every layer of the tiny model the error stays within a few percent).
    let prompt = &prompts[0];
    let reference = prefill_logits(&model, &Device::Cpu, ModelDType::F32, prompt);
    for (dtype, allowed) in [(ModelDType::Bf16, 0.05), (ModelDType::F16, 0.01)] {
        let got = prefill_logits(&model, &gpu, dtype, prompt);
        let error = relative_error(&got, &reference);
        eprintln!("{dtype:?}: relative error of the logits {error:.5}");
        assert!(
            error <= allowed,
            "{dtype:?}: relative error {error} > {allowed}"
        );
    }
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
