//! Corrupt or inconsistent Hugging Face directories fail to load with a clear
//! `EngineError::ModelLoad` that names what is wrong, and never panic.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use pagoda_engine::models::{load_model, WeightFormat};
use pagoda_engine::testing::{write_hf_dir, Family, TinyHfSpec};
use pagoda_engine::EngineError;
use serde_json::{json, Value};

/// A directory written from `spec`, with its config and tensors edited first.
fn broken_dir(
    spec: &TinyHfSpec,
    edit_config: impl FnOnce(&mut Value),
    edit_tensors: impl FnOnce(&mut HashMap<String, Tensor>),
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model");
    let mut config = spec.config_json();
    let mut tensors = spec.tensors().unwrap();
    edit_config(&mut config);
    edit_tensors(&mut tensors);
    write_hf_dir(&path, &config, &tensors, spec.num_shards).unwrap();
    (dir, path)
}

fn with_config(edit: impl FnOnce(&mut Value)) -> (tempfile::TempDir, PathBuf) {
    broken_dir(&TinyHfSpec::default(), edit, |_| {})
}

fn with_tensors(
    spec: &TinyHfSpec,
    edit: impl FnOnce(&mut HashMap<String, Tensor>),
) -> (tempfile::TempDir, PathBuf) {
    broken_dir(spec, |_| {}, edit)
}

/// The message of the `ModelLoad` error loading `path` gives; fails on success, on another
/// error kind, and on a panic.
fn load_error(path: &Path) -> String {
    let result = catch_unwind(AssertUnwindSafe(|| {
        load_model(path, &Device::Cpu, WeightFormat::F32)
    }));
    match result {
        Err(_) => panic!(
            "loading {} panicked instead of returning an error",
            path.display()
        ),
        Ok(Err(EngineError::ModelLoad { message, .. })) => message,
        Ok(Err(other)) => panic!("expected a model-load error, got {other:?}"),
        Ok(Ok(_)) => panic!("{} loaded but is broken", path.display()),
    }
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "`{message}` does not mention `{part}`"
        );
    }
}

#[test]
fn the_unbroken_directory_loads() {
    let (_dir, path) = with_config(|_| {});
    assert!(load_model(&path, &Device::Cpu, WeightFormat::F32).is_ok());
}

#[test]
fn missing_or_unreadable_config() {
    let (_dir, path) = with_config(|_| {});
    std::fs::remove_file(path.join("config.json")).unwrap();
    assert_mentions(&load_error(&path), &["config.json"]);

    std::fs::write(path.join("config.json"), "{\"architectures\": [\"Llama").unwrap();
    assert_mentions(
        &load_error(&path),
        &["config.json", "not a valid model config"],
    );

    std::fs::write(path.join("config.json"), "{\"architectures\": []}").unwrap();
    assert_mentions(&load_error(&path), &["config.json"]);
}

#[test]
fn unsupported_architecture_is_named() {
    let (_dir, path) = with_config(|c| c["architectures"] = json!(["GPT2LMHeadModel"]));
    assert_mentions(
        &load_error(&path),
        &[
            "unsupported architecture",
            "GPT2LMHeadModel",
            "LlamaForCausalLM",
        ],
    );
}

#[test]
fn missing_shard_is_named() {
    let spec = TinyHfSpec {
        num_shards: 3,
        ..TinyHfSpec::default()
    };
    let (_dir, path) = with_tensors(&spec, |_| {});
    std::fs::remove_file(path.join("model-00002-of-00003.safetensors")).unwrap();
    assert_mentions(
        &load_error(&path),
        &["model-00002-of-00003.safetensors", "missing"],
    );
}

#[test]
fn no_safetensors_at_all() {
    let (_dir, path) = with_config(|_| {});
    std::fs::remove_file(path.join("model.safetensors")).unwrap();
    assert_mentions(&load_error(&path), &["model.safetensors"]);
}

#[test]
fn wrong_shape_names_the_tensor_and_both_shapes() {
    let name = "model.layers.1.mlp.up_proj.weight";
    let (_dir, path) = with_tensors(&TinyHfSpec::default(), |t| {
        t.insert(
            name.into(),
            Tensor::zeros((96, 32), DType::F32, &Device::Cpu).unwrap(),
        );
    });
    assert_mentions(&load_error(&path), &[name, "[96, 32]", "[96, 64]"]);
}

#[test]
fn unsupported_tensor_dtypes_are_named() {
    let name = "model.layers.0.self_attn.q_proj.weight";
    for dtype in [DType::U8, DType::I64] {
        let (_dir, path) = with_tensors(&TinyHfSpec::default(), |t| {
            t.insert(
                name.into(),
                Tensor::zeros((64, 64), dtype, &Device::Cpu).unwrap(),
            );
        });
        let message = load_error(&path);
        assert_mentions(&message, &[name, "dtype", &format!("{dtype:?}")]);
    }
}

#[test]
fn inconsistent_config_values() {
    let cases: [(&str, Value, &[&str]); 3] = [
        (
            "num_key_value_heads",
            json!(3),
            &["not a multiple", "num_kv_heads 3"],
        ),
        ("hidden_size", json!(0), &["hidden_size must be positive"]),
        (
            "rope_scaling",
            json!({"rope_type": "banana", "factor": 2.0}),
            &["rope_scaling", "banana", "not supported"],
        ),
    ];
    for (key, value, expected) in cases {
        let (_dir, path) = with_config(|c| c[key] = value);
        assert_mentions(&load_error(&path), expected);
    }
    let (_dir, path) = with_config(|c| c["rope_scaling"] = json!({"type": "linear"}));
    assert_mentions(&load_error(&path), &["rope_scaling.factor"]);
    let (_dir, path) = with_config(|c| c["vocab_size"] = json!("many"));
    assert_mentions(
        &load_error(&path),
        &["config.json", "not a valid model config", "`vocab_size`"],
    );
}

#[test]
fn qwen2_with_per_layer_sliding_windows_is_refused() {
    let spec = TinyHfSpec::for_family(Family::Qwen2);
    let (_dir, path) = broken_dir(&spec, |c| c["use_sliding_window"] = json!(true), |_| {});
    assert_mentions(&load_error(&path), &["use_sliding_window"]);
}

#[test]
fn missing_layer_weights_are_named() {
    for (family, name) in [
        (Family::Llama, "model.layers.1.self_attn.k_proj.weight"),
        (Family::Qwen2, "model.layers.0.self_attn.v_proj.bias"),
        (Family::Qwen3, "model.layers.1.self_attn.q_norm.weight"),
        (Family::Llama, "model.norm.weight"),
        (Family::Llama, "model.embed_tokens.weight"),
    ] {
        let (_dir, path) = with_tensors(&TinyHfSpec::for_family(family), |t| {
            t.remove(name);
        });
        assert_mentions(&load_error(&path), &[name]);
    }
}

#[test]
fn untied_model_without_lm_head_is_refused() {
    let (_dir, path) = with_tensors(&TinyHfSpec::default(), |t| {
        t.remove("lm_head.weight");
    });
    let result = catch_unwind(AssertUnwindSafe(|| {
        load_model(&path, &Device::Cpu, WeightFormat::F32)
    }));
    assert!(
        !matches!(result, Ok(Ok(_))),
        "with tie_word_embeddings=false and no lm_head.weight, the model must not fall back to \
         the embedding as its output head"
    );
    assert_mentions(&load_error(&path), &["lm_head.weight"]);
}

#[test]
fn generation_config_supplies_eos_ids_and_sampling_defaults() {
    let (_dir, path) = with_config(|_| {});
    std::fs::write(
        path.join("generation_config.json"),
        r#"{"eos_token_id": [3, 9], "temperature": 0.6, "top_p": 0.95, "top_k": 20, "repetition_penalty": 1.1}"#,
    )
    .unwrap();
    let model = load_model(&path, &Device::Cpu, WeightFormat::F32).unwrap();
    let config = model.config();
    assert!(config.eos_token_ids.contains(&3) && config.eos_token_ids.contains(&9));
    let defaults = config.sampling_defaults;
    assert_eq!(defaults.temperature, Some(0.6));
    assert_eq!(defaults.top_p, Some(0.95));
    assert_eq!(defaults.top_k, Some(20));
    assert_eq!(defaults.repetition_penalty, Some(1.1));
    assert_eq!(defaults.min_p, None);
}
