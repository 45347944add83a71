//! `LoadFormat::Dummy`: random weights in the shapes of a directory's config.json (no weight
//! files), deterministic for a seed, finite logits, every family's layers present.
#![allow(clippy::unwrap_used)]

use candle_core::{Device, Tensor};
use pagoda_engine::attention::{AttnMetadata, CpuKvCache};
use pagoda_engine::batch::{BatchPlan, ScheduledSeq};
use pagoda_engine::kv::BlockId;
use pagoda_engine::models::{load_model_with, LoadFormat, LoadOptions, ModelInput, WeightFormat};
use pagoda_engine::request::RequestId;
use pagoda_engine::testing::{Family, TinyHfSpec};

const PROMPT: [u32; 9] = [3, 1, 4, 1, 5, 9, 2, 6, 5];

/// A directory with config.json and nothing else.
fn config_only(spec: &TinyHfSpec) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = serde_json::to_string_pretty(&spec.config_json()).unwrap();
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    dir
}

fn prefill_logits(dir: &std::path::Path, seed: u64) -> Vec<f32> {
    let options = LoadOptions {
        load_format: LoadFormat::Dummy,
        seed,
        ..LoadOptions::cpu(WeightFormat::F32)
    };
    let model = load_model_with(dir, &options).unwrap();
    let cfg = model.config().clone();
    let plan = BatchPlan {
        seqs: vec![ScheduledSeq {
            id: RequestId(1),
            num_computed_tokens: 0,
            new_token_ids: PROMPT.to_vec(),
            num_draft_tokens: 0,
            block_table: vec![BlockId(0)],
            sample: true,
            lora: None,
            prompt_logprobs: None,
        }],
        num_batched_tokens: PROMPT.len(),
    };
    let meta = AttnMetadata::from_plan(&plan, 16);
    let input = ModelInput {
        token_ids: Tensor::new(&PROMPT[..], &Device::Cpu).unwrap(),
        positions: Tensor::new(meta.positions.as_slice(), &Device::Cpu).unwrap(),
        logits_indices: Tensor::new(&[PROMPT.len() as u32 - 1], &Device::Cpu).unwrap(),
        lora: Default::default(),
    };
    let mut cache = CpuKvCache::new(cfg.num_layers, cfg.attn_shape(), 16, 1);
    let logits = model.forward(&input, &meta, &mut cache).unwrap();
    assert_eq!(logits.dims(), [1, cfg.vocab_size]);
    logits.flatten_all().unwrap().to_vec1().unwrap()
}

#[test]
fn dummy_weights_need_only_config_json_and_are_deterministic() {
    for family in [Family::Llama, Family::Qwen2, Family::Qwen3, Family::Mistral] {
        let dir = config_only(&TinyHfSpec::for_family(family));
        let first = prefill_logits(dir.path(), 1);
        assert!(first.iter().all(|x| x.is_finite()), "{family:?}");
        assert!(
            first.iter().any(|&x| x != first[0]),
            "{family:?}: flat logits"
        );
        assert_eq!(
            prefill_logits(dir.path(), 1),
            first,
            "{family:?}: same seed"
        );
        assert_ne!(
            prefill_logits(dir.path(), 2),
            first,
            "{family:?}: another seed"
        );
    }
}

#[test]
fn dummy_loading_needs_a_config() {
    let dir = tempfile::tempdir().unwrap();
    let options = LoadOptions {
        load_format: LoadFormat::Dummy,
        ..LoadOptions::cpu(WeightFormat::F32)
    };
    let error = load_model_with(dir.path(), &options)
        .unwrap_err()
        .to_string();
    assert!(error.contains("config.json"), "{error}");
}
