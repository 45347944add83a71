//! Every Hugging Face family the engine serves (Llama tied/untied and with each RoPE scaling,
//! Mistral with a sliding window, Qwen2, Qwen3) computes the same logits as an independent dense
//! f64 reference on the same weights: in one prefill, in chunks at several cache offsets, in
//! decode steps, from f16/bf16 checkpoints and from sharded ones; and it generates through the
//! engine thread.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use common::dense_reference::{dense_logits, top2_margin};
use pagoda_engine::attention::{AttnMetadata, CpuKvCache};
use pagoda_engine::batch::{BatchPlan, ScheduledSeq};
use pagoda_engine::kv::BlockId;
use pagoda_engine::models::{load_model, WeightFormat};
use pagoda_engine::runner::input::build_model_input;
use pagoda_engine::runner::ModelRunner;
use pagoda_engine::testing::{Family, TinyHfSpec};
use pagoda_engine::{start_engine, EngineConfig, RequestId};
use serde_json::json;

/// Engine (f32 arithmetic) against the f64 reference, on logits of standard deviation ≈ 2.
const TOLERANCE: f32 = 1e-3;
/// Small blocks, so that a 35-token sequence spans nine of them.
const BLOCK_SIZE: usize = 4;
const PROMPT_LEN: usize = 30;
/// Prefill chunk sizes (summing to `PROMPT_LEN`), none aligned to the block size.
const CHUNKS: [usize; 3] = [7, 11, 12];
const NUM_DECODE_STEPS: usize = 5;
/// Only a reference argmax that wins by more than this (and by more than twice the int8 model's
/// measured logit error) is expected of int8 weights.
const CLEAR_MARGIN: f32 = 0.05;
/// int8 weights (one scale per 32 values) move these logits by at most this (measured 0.07–0.18,
/// tied heads the most); a broken int8 path moves them by whole units.
const MAX_INT8_DIFF: f32 = 0.3;

/// The prompt followed by the tokens fed in decode steps.
fn sequence(vocab_size: usize) -> Vec<u32> {
    (0..PROMPT_LEN + NUM_DECODE_STEPS)
        .map(|i| ((i * 37 + 5) % vocab_size) as u32)
        .collect()
}

fn write(spec: &TinyHfSpec) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model");
    spec.write(&path).unwrap();
    (dir, path)
}

/// Blocks `num_blocks..=1` (reversed, block 0 unused): logical order differs from physical.
fn scrambled_block_table(num_tokens: usize) -> Vec<BlockId> {
    (1..=num_tokens.div_ceil(BLOCK_SIZE) as u32)
        .rev()
        .map(BlockId)
        .collect()
}

fn cache_for(model: &dyn pagoda_engine::models::CausalLm, num_tokens: usize) -> CpuKvCache {
    let cfg = model.config();
    let num_blocks = num_tokens.div_ceil(BLOCK_SIZE) + 1;
    CpuKvCache::new(cfg.num_layers, cfg.attn_shape(), BLOCK_SIZE, num_blocks)
}

/// One prefill of all `tokens`, with logits at every position.
fn engine_prefill_logits(path: &Path, format: WeightFormat, tokens: &[u32]) -> Vec<Vec<f32>> {
    let model = load_model(path, &Device::Cpu, format).unwrap();
    let mut cache = cache_for(model.as_ref(), tokens.len());
    let plan = BatchPlan {
        seqs: vec![ScheduledSeq {
            id: RequestId(1),
            num_computed_tokens: 0,
            new_token_ids: tokens.to_vec(),
            num_draft_tokens: 0,
            block_table: scrambled_block_table(tokens.len()),
            sample: true,
            lora: None,
            prompt_logprobs: None,
        }],
        num_batched_tokens: tokens.len(),
    };
    let meta = AttnMetadata::from_plan(&plan, BLOCK_SIZE);
    let mut input = build_model_input(&plan, &meta, &Device::Cpu).unwrap();
    input.logits_indices = Tensor::arange(0u32, tokens.len() as u32, &Device::Cpu).unwrap();
    let logits = model.forward(&input, &meta, &mut cache).unwrap();
    logits.to_vec2::<f32>().unwrap()
}

/// Through `ModelRunner`: the prompt in `CHUNKS`, then one token per decode step. Returns
/// (position, logits) of the last token of every step.
fn engine_chunked_logits(path: &Path, tokens: &[u32]) -> Vec<(usize, Vec<f32>)> {
    let model = load_model(path, &Device::Cpu, WeightFormat::F32).unwrap();
    let cache = cache_for(model.as_ref(), tokens.len());
    let mut runner = ModelRunner::new(model, Box::new(cache), BLOCK_SIZE);
    let steps = CHUNKS.into_iter().chain([1; NUM_DECODE_STEPS]);
    let mut done = 0;
    let mut rows = Vec::new();
    for len in steps {
        let plan = BatchPlan {
            seqs: vec![ScheduledSeq {
                id: RequestId(1),
                num_computed_tokens: done,
                new_token_ids: tokens[done..done + len].to_vec(),
                num_draft_tokens: 0,
                block_table: scrambled_block_table(tokens.len()),
                sample: true,
                lora: None,
                prompt_logprobs: None,
            }],
            num_batched_tokens: len,
        };
        let logits = runner.execute(&plan).unwrap();
        done += len;
        rows.push((done - 1, logits.row(0).to_vec()));
    }
    assert_eq!(done, tokens.len());
    rows
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Asserts every row pair is within `tolerance`; returns the largest difference.
fn assert_rows_close(label: &str, got: &[Vec<f32>], want: &[Vec<f32>], tolerance: f32) -> f32 {
    assert_eq!(got.len(), want.len(), "{label}: row count");
    let mut worst = 0.0f32;
    for (position, (g, w)) in got.iter().zip(want).enumerate() {
        let diff = max_abs_diff(g, w);
        assert!(
            diff < tolerance,
            "{label}: logits at position {position} differ from the dense reference by {diff} \
             (tolerance {tolerance})"
        );
        worst = worst.max(diff);
    }
    worst
}

/// Prefill (every position) and chunked + decode (last position of each step) against the
/// dense reference.
fn check_against_reference(label: &str, spec: &TinyHfSpec) {
    let (_dir, path) = write(spec);
    let tokens = sequence(spec.vocab_size);
    let want = dense_logits(&spec.config_json(), &spec.weights().unwrap(), &tokens);
    let prefill = engine_prefill_logits(&path, WeightFormat::F32, &tokens);
    let prefill_diff = assert_rows_close(&format!("{label} prefill"), &prefill, &want, TOLERANCE);
    let chunked = engine_chunked_logits(&path, &tokens);
    let (positions, rows): (Vec<usize>, Vec<Vec<f32>>) = chunked.into_iter().unzip();
    let want_rows: Vec<Vec<f32>> = positions.iter().map(|&p| want[p].clone()).collect();
    let chunked_diff = assert_rows_close(&format!("{label} chunked"), &rows, &want_rows, TOLERANCE);
    println!(
        "{label}: max |engine − reference| prefill {prefill_diff:.2e}, chunked {chunked_diff:.2e}"
    );
}

fn llama_with_rope_scaling(scaling: serde_json::Value) -> TinyHfSpec {
    TinyHfSpec {
        rope_scaling: Some(scaling),
        ..TinyHfSpec::for_family(Family::Llama)
    }
}

fn llama3_scaling() -> serde_json::Value {
    // With head_dim 16 and original length 64, the wavelengths (6.3, 19.9, 62.8, 199, …) fall in
    // all three bands: kept (< 16), interpolated (16..64) and divided (> 64).
    json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
           "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
}

/// The specs every family test covers, by label.
fn family_cases() -> Vec<(&'static str, TinyHfSpec)> {
    vec![
        ("llama untied", TinyHfSpec::for_family(Family::Llama)),
        (
            "llama tied",
            TinyHfSpec {
                tie_word_embeddings: true,
                ..TinyHfSpec::for_family(Family::Llama)
            },
        ),
        (
            "llama llama3 rope",
            llama_with_rope_scaling(llama3_scaling()),
        ),
        (
            "llama linear rope",
            llama_with_rope_scaling(json!({"type": "linear", "factor": 4.0})),
        ),
        (
            "llama dynamic rope",
            llama_with_rope_scaling(json!({"type": "dynamic", "factor": 2.0})),
        ),
        ("mistral window 8", TinyHfSpec::for_family(Family::Mistral)),
        ("qwen2", TinyHfSpec::for_family(Family::Qwen2)),
        ("qwen3 head_dim 32", TinyHfSpec::for_family(Family::Qwen3)),
    ]
}

fn check_case(label: &str) {
    let (_, spec) = family_cases()
        .into_iter()
        .find(|(l, _)| *l == label)
        .unwrap();
    check_against_reference(label, &spec);
}

#[test]
fn llama_untied_matches_the_reference() {
    check_case("llama untied");
}

#[test]
fn llama_tied_matches_the_reference() {
    check_case("llama tied");
}

#[test]
fn llama3_rope_scaling_matches_the_reference() {
    check_case("llama llama3 rope");
}

#[test]
fn linear_rope_scaling_matches_the_reference() {
    check_case("llama linear rope");
}

#[test]
fn dynamic_rope_scaling_matches_the_reference() {
    check_case("llama dynamic rope");
}

#[test]
fn mistral_sliding_window_matches_the_reference() {
    check_case("mistral window 8");
}

#[test]
fn qwen2_matches_the_reference() {
    check_case("qwen2");
}

#[test]
fn qwen3_matches_the_reference() {
    check_case("qwen3 head_dim 32");
}

/// The options under test change the reference's logits far beyond the tolerance, so a model
/// that ignored one could not pass.
#[test]
fn each_option_changes_the_reference() {
    let tokens = sequence(128);
    let logits =
        |spec: &TinyHfSpec| dense_logits(&spec.config_json(), &spec.weights().unwrap(), &tokens);
    let base = logits(&TinyHfSpec::for_family(Family::Llama));
    let mistral = TinyHfSpec::for_family(Family::Mistral);
    let without_window = TinyHfSpec {
        sliding_window: None,
        ..mistral.clone()
    };
    let pairs = [
        (
            "llama3",
            logits(&llama_with_rope_scaling(llama3_scaling())),
            base.clone(),
        ),
        (
            "linear",
            logits(&llama_with_rope_scaling(
                json!({"type": "linear", "factor": 4.0}),
            )),
            base.clone(),
        ),
        (
            "dynamic",
            logits(&llama_with_rope_scaling(
                json!({"type": "dynamic", "factor": 2.0}),
            )),
            base.clone(),
        ),
        ("sliding window", logits(&mistral), logits(&without_window)),
    ];
    for (option, with, without) in pairs {
        let last = PROMPT_LEN + NUM_DECODE_STEPS - 1;
        let diff = max_abs_diff(&with[last], &without[last]);
        assert!(
            diff > 100.0 * TOLERANCE,
            "{option} barely changes the logits ({diff})"
        );
    }
}

/// Greedy generation through the engine thread with its default int8 weights: every generated
/// token is the reference's argmax wherever the reference's top-2 margin is clear.
#[test]
fn each_family_generates_through_the_engine() {
    for (label, spec) in family_cases() {
        let (_dir, path) = write(&spec);
        let handle = start_engine(EngineConfig::default(), &path).unwrap();
        let prompt = sequence(spec.vocab_size)[..PROMPT_LEN].to_vec();
        let outcome = common::run_one(
            &handle,
            common::request(&handle, prompt.clone(), common::greedy(10)),
        );
        handle.shutdown();
        let generated = outcome.token_ids();
        assert_eq!(generated.len(), 10, "{label}: {generated:?}");
        let mut fed = prompt.clone();
        fed.extend_from_slice(&generated[..9]);
        let want = dense_logits(&spec.config_json(), &spec.weights().unwrap(), &fed);
        // Where no logit moves by more than `int8_diff`, a margin above twice that cannot flip.
        let int8 = engine_prefill_logits(&path, WeightFormat::Int8, &fed);
        let int8_diff = assert_rows_close(label, &int8, &want, MAX_INT8_DIFF);
        let clear_margin = CLEAR_MARGIN.max(2.0 * int8_diff);
        let mut num_checked = 0;
        for (i, &token) in generated.iter().enumerate() {
            let (best, margin) = top2_margin(&want[PROMPT_LEN - 1 + i]);
            if margin > clear_margin {
                num_checked += 1;
                assert_eq!(
                    token, best,
                    "{label}: token {i} is not the reference's argmax (margin {margin:.3})"
                );
            }
        }
        assert!(
            num_checked >= 3,
            "{label}: only {num_checked} clear tokens to check"
        );
        println!(
            "{label}: generated {generated:?}; {num_checked}/10 had a clear reference argmax; \
             int8 logits within {int8_diff:.2e}, margin threshold {clear_margin:.2}"
        );
    }
}

/// The on-disk dtype of every tensor in a written directory's single file.
fn stored_dtypes(path: &Path) -> Vec<DType> {
    let tensors =
        candle_core::safetensors::load(path.join("model.safetensors"), &Device::Cpu).unwrap();
    tensors.values().map(|t| t.dtype()).collect()
}

/// An f16 or bf16 checkpoint loads exactly the values it stores (so it matches the reference
/// built from the same rounded weights to `TOLERANCE`), and stays within the rounding's reach of
/// the f32 checkpoint.
#[test]
fn half_precision_checkpoints_load_what_they_store() {
    let tokens = sequence(128);
    // Unit roundoff: f16 keeps 11 significant bits, bf16 8.
    for (dtype, unit_roundoff) in [(DType::F16, 2f32.powi(-11)), (DType::BF16, 2f32.powi(-8))] {
        for family in [Family::Qwen2, Family::Qwen3] {
            let full = TinyHfSpec::for_family(family);
            let half = TinyHfSpec {
                dtype,
                ..full.clone()
            };
            let (_d1, full_path) = write(&full);
            let (_d2, half_path) = write(&half);
            assert!(stored_dtypes(&half_path).iter().all(|&d| d == dtype));
            let label = format!("{family:?} {dtype:?}");
            let got = engine_prefill_logits(&half_path, WeightFormat::F32, &tokens);
            let want = dense_logits(&half.config_json(), &half.weights().unwrap(), &tokens);
            let exact = assert_rows_close(&label, &got, &want, TOLERANCE);
            let full_logits = engine_prefill_logits(&full_path, WeightFormat::F32, &tokens);
            // Rounding each weight by a relative u moves logits of magnitude ~|z| by a few
            // u·|z| after two layers (measured 1.3–2.3 u·max|z|); allow 5 u·max|z|.
            let scale = full_logits
                .iter()
                .flatten()
                .fold(0.0f32, |m, v| m.max(v.abs()));
            let bound = 5.0 * unit_roundoff * scale;
            let rounding = assert_rows_close(&format!("{label} vs f32"), &got, &full_logits, bound);
            assert!(rounding > 0.0, "{label}: no rounding happened");
            println!("{label}: vs reference {exact:.2e}; vs f32 checkpoint {rounding:.2e} (bound {bound:.2e})");
        }
    }
}

/// A checkpoint split into three shards with an index loads the same model as one file.
#[test]
fn sharded_checkpoint_loads_like_a_single_file() {
    let single = TinyHfSpec::for_family(Family::Qwen2);
    let sharded = TinyHfSpec {
        num_shards: 3,
        ..single.clone()
    };
    let (_d1, single_path) = write(&single);
    let (_d2, sharded_path) = write(&sharded);
    assert!(!sharded_path.join("model.safetensors").exists());
    assert!(sharded_path.join("model.safetensors.index.json").exists());
    for i in 1..=3 {
        assert!(sharded_path
            .join(format!("model-{i:05}-of-00003.safetensors"))
            .exists());
    }
    let tokens = sequence(128);
    let want = engine_prefill_logits(&single_path, WeightFormat::F32, &tokens);
    let got = engine_prefill_logits(&sharded_path, WeightFormat::F32, &tokens);
    assert_eq!(
        got, want,
        "sharded and single-file models compute different logits"
    );
}

/// transformers 5 writes RoPE's base and scaling as one `rope_parameters` object (no top-level
/// `rope_theta` or `rope_scaling`): the same model, the same logits.
#[test]
fn transformers_5_rope_parameters_mean_rope_theta_and_rope_scaling() {
    let spec = TinyHfSpec {
        rope_theta: 50_000.0,
        ..llama_with_rope_scaling(llama3_scaling())
    };
    let (_dir, path) = write(&spec);
    let tokens = sequence(spec.vocab_size);
    let classic = engine_prefill_logits(&path, WeightFormat::F32, &tokens);
    let mut config = spec.config_json();
    let fields = config.as_object_mut().unwrap();
    let theta = fields.remove("rope_theta").unwrap();
    let mut parameters = fields.remove("rope_scaling").unwrap();
    parameters["rope_theta"] = theta;
    fields.insert("rope_parameters".into(), parameters);
    let write_config = |config: &serde_json::Value| {
        std::fs::write(path.join("config.json"), config.to_string()).unwrap();
    };
    write_config(&config);
    assert_eq!(
        engine_prefill_logits(&path, WeightFormat::F32, &tokens),
        classic
    );
    // Without it, the default base and no scaling: other logits.
    config.as_object_mut().unwrap().remove("rope_parameters");
    write_config(&config);
    assert_ne!(
        engine_prefill_logits(&path, WeightFormat::F32, &tokens),
        classic
    );
}
