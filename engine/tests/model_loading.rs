//! Loading GGUF models: every supported tensor type tracks the f32 model, and broken files give
//! clear errors instead of panics.
#![allow(clippy::unwrap_used)]

mod common;

use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use pagoda_engine::attention::CpuKvCache;
use pagoda_engine::batch::{BatchPlan, ScheduledSeq};
use pagoda_engine::kv::BlockId;
use pagoda_engine::models::{load_model, WeightFormat};
use pagoda_engine::runner::ModelRunner;
use pagoda_engine::testing::{write_gguf, TinyLlamaSpec};
use pagoda_engine::{EngineError, RequestId};

/// A spec whose matrices are multiples of 256, as K-quants need.
fn kquant_spec(dtype: GgmlDType) -> TinyLlamaSpec {
    TinyLlamaSpec {
        hidden_size: 256,
        intermediate_size: 512,
        num_heads: 4,
        num_kv_heads: 2,
        dtype,
        ..TinyLlamaSpec::default()
    }
}

/// Logits of the last prompt token, in one prefill step.
fn prefill_logits(path: &std::path::Path, format: WeightFormat, prompt: &[u32]) -> Vec<f32> {
    let model = load_model(path, &Device::Cpu, format).unwrap();
    let cfg = model.config().clone();
    let cache = CpuKvCache::new(cfg.num_layers, cfg.attn_shape(), 16, 4);
    let mut runner = ModelRunner::new(model, Box::new(cache), 16);
    let plan = BatchPlan {
        seqs: vec![ScheduledSeq {
            id: RequestId(1),
            num_computed_tokens: 0,
            new_token_ids: prompt.to_vec(),
            num_draft_tokens: 0,
            block_table: (0..prompt.len().div_ceil(16) as u32).map(BlockId).collect(),
            sample: true,
            lora: None,
            prompt_logprobs: None,
        }],
        num_batched_tokens: prompt.len(),
    };
    runner.execute(&plan).unwrap().values
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn every_tensor_type_tracks_the_f32_model() {
    let prompt: Vec<u32> = (1..40).map(|i| (i * 37 % 255) as u32).collect();
    let reference = common::tiny_model(&kquant_spec(GgmlDType::F32));
    let want = prefill_logits(&reference.path, WeightFormat::Native, &prompt);
    // (type, least cosine similarity of logits with the f32 model)
    // This random model amplifies weight noise (peaky attention), so the bounds sit just under
    // what each type reaches (measured 2026-11-21); a wrong decoding lands near 0.
    let cases = [
        (GgmlDType::F16, 0.9999f64),
        (GgmlDType::Q8_0, 0.998),
        (GgmlDType::Q6K, 0.985),
        (GgmlDType::Q5K, 0.96),
        (GgmlDType::Q4_1, 0.92),
        (GgmlDType::Q4_0, 0.84),
        (GgmlDType::Q4K, 0.84),
        (GgmlDType::Q3K, 0.62),
        (GgmlDType::Q2K, 0.47),
    ];
    for (dtype, min_cosine) in cases {
        let model = common::tiny_model(&kquant_spec(dtype));
        let formats = [
            WeightFormat::F32,
            WeightFormat::Auto,
            WeightFormat::Int4,
            WeightFormat::Int8,
            WeightFormat::Native,
            WeightFormat::Vnni15,
        ];
        for format in formats {
            // int8 repacking, and candle's block kernels (which quantize activations), add their error.
            let min_cosine = if format != WeightFormat::F32 {
                min_cosine.min(0.998)
            } else {
                min_cosine
            };
            let got = prefill_logits(&model.path, format, &prompt);
            let similarity = cosine(&want, &got);
            assert!(
                similarity >= min_cosine,
                "{dtype:?} as {format:?}: cosine {similarity} < {min_cosine}"
            );
        }
    }
}

/// How far `vnni15`'s logits may be from the f32 model's, as a share of the largest logit: the
/// same 4-bit blocks, the activations rounded to 15 bits per 32 values.
const VNNI15_LOGIT_BOUND: f32 = 2e-3;

/// int4 holds a file's Q4_0, Q4_1 and Q4_K blocks exactly, so its logits are the f32 model's (the
/// dequantized blocks) but for summation order (the tiles read the weights in registers for one
/// token, unpacked per tile for 39); int8's repacking of the same blocks is off by 1–2% of the
/// largest logit.
#[test]
fn four_bit_blocks_as_int4_give_the_f32_logits() {
    let long_prompt: Vec<u32> = (1..40).map(|i| (i * 37 % 255) as u32).collect();
    let max_diff = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max)
    };
    for dtype in [GgmlDType::Q4_0, GgmlDType::Q4_1, GgmlDType::Q4K] {
        let model = common::tiny_model(&kquant_spec(dtype));
        for prompt in [&long_prompt[..], &[17]] {
            let want = prefill_logits(&model.path, WeightFormat::F32, prompt);
            let int4 = max_diff(
                &want,
                &prefill_logits(&model.path, WeightFormat::Int4, prompt),
            );
            let int8 = max_diff(
                &want,
                &prefill_logits(&model.path, WeightFormat::Int8, prompt),
            );
            let vnni15 = max_diff(
                &want,
                &prefill_logits(&model.path, WeightFormat::Vnni15, prompt),
            );
            let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let case = format!("{dtype:?}, {} tokens", prompt.len());
            assert!(
                int4 <= 5e-4 * scale,
                "{case}: off by {int4} (largest logit {scale})"
            );
            assert!(
                20.0 * int4 <= int8,
                "{case}: int4 off by {int4}, int8 by {int8}"
            );
            println!("{case}: int4 off by {int4:.2e}, vnni15 by {vnni15:.2e}, int8 by {int8:.2e} (largest logit {scale:.2})");
            assert!(
                vnni15 <= VNNI15_LOGIT_BOUND * scale && 5.0 * vnni15 <= int8,
                "{case}: vnni15 off by {vnni15}, int8 by {int8} (largest logit {scale})"
            );
        }
    }
}

fn load_error(path: &std::path::Path) -> String {
    match load_model(path, &Device::Cpu, WeightFormat::F32) {
        Err(EngineError::ModelLoad { message, .. }) => message,
        Err(other) => panic!("expected a model-load error, got {other}"),
        Ok(_) => panic!("{} loaded but is broken", path.display()),
    }
}

#[test]
fn broken_files_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let good = TinyLlamaSpec::default();
    good.write_gguf(&path("good.gguf")).unwrap();
    let bytes = std::fs::read(path("good.gguf")).unwrap();

    assert!(load_error(&path("missing.gguf")).contains("does not exist"));
    std::fs::write(path("empty.gguf"), b"").unwrap();
    assert!(load_error(&path("empty.gguf")).contains("not a valid GGUF"));
    std::fs::write(
        path("noise.gguf"),
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(load_error(&path("noise.gguf")).contains("GGUF"));
    std::fs::write(path("truncated.gguf"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(load_error(&path("truncated.gguf")).contains("cannot read tensor"));
    std::fs::write(path("header-only.gguf"), &bytes[..64]).unwrap();
    let _ = load_error(&path("header-only.gguf"));
    std::fs::write(path("model.bin"), &bytes).unwrap();
    assert!(load_error(&path("model.bin")).contains(".gguf"));

    let tensors = good.tensors().unwrap();
    let with_meta = |key: &str, value: Value| -> Vec<(String, Value)> {
        let mut metadata: Vec<_> = good
            .metadata()
            .into_iter()
            .filter(|(k, _)| k != key)
            .collect();
        metadata.push((key.to_string(), value));
        metadata
    };
    write_gguf(
        &path("arch.gguf"),
        &with_meta("general.architecture", Value::String("rwkv".into())),
        &tensors,
    )
    .unwrap();
    assert!(load_error(&path("arch.gguf")).contains("unsupported architecture `rwkv`"));
    write_gguf(
        &path("shape.gguf"),
        &with_meta("llama.embedding_length", Value::U32(128)),
        &tensors,
    )
    .unwrap();
    assert!(load_error(&path("shape.gguf")).contains("has shape"));
    write_gguf(
        &path("heads.gguf"),
        &with_meta("llama.attention.head_count_kv", Value::U32(3)),
        &tensors,
    )
    .unwrap();
    assert!(load_error(&path("heads.gguf")).contains("num_kv_heads"));
    let without_layer: Vec<_> = good
        .tensors()
        .unwrap()
        .into_iter()
        .filter(|(n, _)| n != "blk.1.ffn_up.weight")
        .collect();
    write_gguf(&path("no-tensor.gguf"), &good.metadata(), &without_layer).unwrap();
    assert!(load_error(&path("no-tensor.gguf")).contains("`blk.1.ffn_up.weight` is missing"));
    let no_blocks: Vec<_> = good
        .metadata()
        .into_iter()
        .filter(|(k, _)| k != "llama.block_count")
        .collect();
    write_gguf(&path("no-key.gguf"), &no_blocks, &tensors).unwrap();
    assert!(load_error(&path("no-key.gguf")).contains("llama.block_count"));
}
