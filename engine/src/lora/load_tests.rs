//! Loading PEFT directories: the fused pairs equal the adapter's own factors, GGUF Llama bases get
//! their q/k rows in llama.cpp's order, and every defect is refused naming the field or tensor.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};

use super::*;
use crate::lora::adapter::FusedProjection;
use crate::testing::gguf_to_hf::permute_qk_rows;
use crate::testing::tiny_lora::TinyLoraSpec;

fn model(rope_interleaved: bool) -> ModelConfig {
    let mut config = ModelConfig::mock(64, vec![0], 128);
    config.hidden_size = 16;
    config.intermediate_size = 24;
    config.num_layers = 2;
    config.num_heads = 4;
    config.num_kv_heads = 2;
    config.head_dim = 4;
    config.rope_interleaved = rope_interleaved;
    config
}

fn options(max_rank: usize) -> LoraLoadOptions {
    LoraLoadOptions {
        max_rank,
        device: Device::Cpu,
        dtype: DType::F32,
    }
}

fn written(spec: &TinyLoraSpec, model: &ModelConfig) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    spec.write(model, dir.path()).unwrap();
    dir
}

fn load(dir: &Path, model: &ModelConfig) -> Result<LoraAdapter> {
    load_lora_adapter("test", dir, model, &options(16))
}

fn values(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn assert_close(a: &Tensor, b: &Tensor) {
    assert_eq!(a.dims(), b.dims());
    for (x, y) in values(a).iter().zip(values(b)) {
        assert!((x - y).abs() < 1e-6, "{x} vs {y}");
    }
}

#[test]
fn fused_pairs_compute_each_parts_scaled_delta() {
    let config = model(false);
    let spec = TinyLoraSpec::default();
    let adapter = load(written(&spec, &config).path(), &config).unwrap();
    assert_eq!((adapter.rank(), adapter.num_modules()), (4, 14));
    let factors: HashMap<_, _> = spec.factors(&config).unwrap().into_iter().collect();
    let x = Tensor::arange(0f32, 48.0, &Device::Cpu)
        .unwrap()
        .reshape((3, 16))
        .unwrap();
    let expected = |layer: usize, target: LoraTarget| {
        let (a, b) = &factors[&(layer, target)];
        (x.matmul(&a.t().unwrap())
            .unwrap()
            .matmul(&b.t().unwrap())
            .unwrap()
            * spec.scale())
        .unwrap()
    };
    let qkv = adapter
        .layer(1)
        .unwrap()
        .pair(FusedProjection::Qkv)
        .unwrap()
        .delta(&x)
        .unwrap();
    let parts = [LoraTarget::Q, LoraTarget::K, LoraTarget::V].map(|t| expected(1, t));
    assert_close(&qkv, &Tensor::cat(&parts, 1).unwrap());
    let gate_up = adapter
        .layer(0)
        .unwrap()
        .pair(FusedProjection::GateUp)
        .unwrap()
        .delta(&x)
        .unwrap();
    let parts = [LoraTarget::Gate, LoraTarget::Up].map(|t| expected(0, t));
    assert_close(&gate_up, &Tensor::cat(&parts, 1).unwrap());
}

#[test]
fn untargeted_parts_are_zero_and_gguf_llama_rows_are_permuted() {
    let spec = TinyLoraSpec {
        targets: vec![LoraTarget::K],
        layers: Some(vec![1]),
        ..TinyLoraSpec::default()
    };
    let hf = model(false);
    let gguf = model(true);
    let dir = written(&spec, &hf);
    let plain = load(dir.path(), &hf).unwrap();
    let permuted = load(dir.path(), &gguf).unwrap();
    assert!(plain.layer(0).unwrap().pair(FusedProjection::Qkv).is_none());
    assert!(plain.layer(1).unwrap().pair(FusedProjection::O).is_none());
    let x = Tensor::ones((1, 16), DType::F32, &Device::Cpu).unwrap();
    let delta = |a: &LoraAdapter| {
        a.layer(1)
            .unwrap()
            .pair(FusedProjection::Qkv)
            .unwrap()
            .delta(&x)
            .unwrap()
    };
    let (q_dim, kv_dim) = (16, 8);
    let plain_delta = delta(&plain);
    let q_part = values(&plain_delta.narrow(1, 0, q_dim).unwrap());
    assert!(q_part.iter().all(|&v| v == 0.0), "q is not adapted");
    let k_plain = plain_delta.narrow(1, q_dim, kv_dim).unwrap().t().unwrap();
    let k_permuted = delta(&permuted)
        .narrow(1, q_dim, kv_dim)
        .unwrap()
        .t()
        .unwrap();
    assert_close(&k_permuted, &permute_qk_rows(&k_plain, 2).unwrap());
}

/// Rewrites `adapter_model.safetensors` with `edit` applied to its tensors.
fn edit_tensors(dir: &Path, edit: impl FnOnce(&mut HashMap<String, Tensor>)) {
    let path = dir.join("adapter_model.safetensors");
    let mut tensors = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    edit(&mut tensors);
    candle_core::safetensors::save(&tensors, &path).unwrap();
}

fn error_of(dir: &Path, config: &ModelConfig) -> String {
    match load(dir, config) {
        Err(EngineError::Adapter(message)) => message,
        other => panic!("expected an adapter error, got {other:?}"),
    }
}

#[test]
fn defects_are_refused_naming_the_field_or_tensor() {
    let config = model(false);
    let spec = TinyLoraSpec::default();
    let q_b = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight";

    let dir = written(&spec, &config);
    edit_tensors(dir.path(), |t| {
        t.insert(
            q_b.into(),
            Tensor::zeros((15, 4), DType::F32, &Device::Cpu).unwrap(),
        );
    });
    let error = error_of(dir.path(), &config);
    assert!(error.contains(q_b) && error.contains("[15, 4]"), "{error}");

    let dir = written(&spec, &config);
    edit_tensors(dir.path(), |t| {
        t.remove(q_b);
    });
    assert!(error_of(dir.path(), &config).contains("q_proj.lora_A"));

    let dir = written(&spec, &config);
    let embedding = "base_model.model.model.embed_tokens.lora_embedding_A";
    edit_tensors(dir.path(), |t| {
        t.insert(
            embedding.into(),
            Tensor::zeros((4, 64), DType::F32, &Device::Cpu).unwrap(),
        );
    });
    assert!(error_of(dir.path(), &config).contains("embedding targets"));

    let dir = written(&spec, &config);
    let mut deeper = config.clone();
    deeper.num_layers = 1;
    assert!(error_of(dir.path(), &deeper).contains("the base model has 1 layers"));

    let dir = written(&spec, &config);
    let rank = load_lora_adapter("test", dir.path(), &config, &options(2)).unwrap_err();
    assert!(rank.to_string().contains("--max-lora-rank 2"), "{rank}");

    let dir = written(&spec, &config);
    std::fs::remove_file(dir.path().join("adapter_model.safetensors")).unwrap();
    assert!(error_of(dir.path(), &config).contains("no adapter_model.safetensors"));

    let dir = written(&spec, &config);
    std::fs::write(
        dir.path().join("adapter_config.json"),
        "{\"r\": 4, \"use_dora\": true}",
    )
    .unwrap();
    assert!(error_of(dir.path(), &config).contains("use_dora"));

    let missing = error_of(Path::new("/nonexistent/adapter"), &config);
    assert!(missing.contains("/nonexistent/adapter") && missing.contains("not a directory"));
}

#[test]
fn fused_checkpoints_take_fused_targets_and_refuse_separate_ones() {
    let mut fused = model(false);
    fused.features.fused_projections = true;
    let spec = TinyLoraSpec {
        targets: LoraTarget::FUSED.to_vec(),
        ..TinyLoraSpec::default()
    };
    let adapter = load(written(&spec, &fused).path(), &fused).unwrap();
    assert_eq!(adapter.num_modules(), 8);
    let factors: HashMap<_, _> = spec.factors(&fused).unwrap().into_iter().collect();
    let x = Tensor::arange(0f32, 32.0, &Device::Cpu)
        .unwrap()
        .reshape((2, 16))
        .unwrap();
    for (target, projection, width) in [
        (LoraTarget::Qkv, FusedProjection::Qkv, 16 + 2 * 8),
        (LoraTarget::GateUp, FusedProjection::GateUp, 2 * 24),
    ] {
        let (a, b) = &factors[&(1, target)];
        let expected = (x
            .matmul(&a.t().unwrap())
            .unwrap()
            .matmul(&b.t().unwrap())
            .unwrap()
            * spec.scale())
        .unwrap();
        let pair = adapter.layer(1).unwrap().pair(projection).unwrap();
        assert_eq!(pair.b_t.dims(), &[4, width]);
        assert_close(&pair.delta(&x).unwrap(), &expected);
    }

    let separate = written(&TinyLoraSpec::default(), &model(false));
    let error = error_of(separate.path(), &fused);
    assert!(
        error.contains("no `") && error.contains("qkv_proj, o_proj, gate_up_proj, down_proj"),
        "{error}"
    );
    let error = error_of(written(&spec, &fused).path(), &model(false));
    assert!(
        error.contains("no `qkv_proj` module") || error.contains("no `gate_up_proj` module"),
        "{error}"
    );
}
