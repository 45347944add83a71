//! LoRA adapters against PEFT: for every family an adapter written by PEFT's own
//! `save_pretrained` (`tests/fixtures/families/<family>/lora/`, r 4, alpha 8, on every attention
//! and MLP projection — Phi-3's fused `qkv_proj` and `gate_up_proj`, attention only on the MoE
//! families) and transformers + PEFT's float32 logits with it (`transformers-lora.safetensors`,
//! by scripts/reference/make_lora_fixtures.py). Our f32 weights with the adapter must match them
//! within 1e-4 at every position, on the Hugging Face directory and on the GGUF F32 file (whose
//! q/k rows llama.cpp permuted for Llama and Granite), alone and beside a sequence of the base
//! model in the same step.
#![allow(clippy::unwrap_used)]

mod parity;

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device};
use pagoda_engine::lora::{load_lora_adapter, LoraLoadOptions};
use pagoda_engine::models::{CausalLm, WeightFormat};
use pagoda_engine::LoraAdapter;
use parity::{compare, fixture, load, prefill_batch, Reference};

/// Every family with an adapter fixture.
const FAMILIES: [&str; 10] = [
    "llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "granite", "mixtral",
    "qwen3moe",
];
/// Families whose GGUF file llama.cpp runs as another model than transformers runs the
/// checkpoint (reference_parity.rs): their GGUF files have no transformers reference.
const GGUF_DIFFERS_FROM_HF: [&str; 3] = ["mistral", "gemma2", "gemma3"];
/// f32 against transformers + PEFT's float32, relative to the largest logit.
const TOLERANCE: f32 = 1e-4;

fn adapter_for(model: &dyn CausalLm, dir: &Path) -> Arc<LoraAdapter> {
    let options = LoraLoadOptions {
        max_rank: 16,
        device: Device::Cpu,
        dtype: DType::F32,
    };
    let adapter = load_lora_adapter("peft", dir, model.config(), &options)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    Arc::new(adapter)
}

/// Every prompt with the adapter beside the same prompt without it, in one step: the adapted
/// rows against PEFT's, the others against transformers' base logits. The worst relative error.
fn adapted_beside_base(family: &str, model: &dyn CausalLm) -> f32 {
    let dir = fixture(family);
    let adapter = adapter_for(model, &dir.join("lora"));
    let peft = Reference::read(&dir.join("transformers-lora.safetensors"));
    let base = Reference::read(&dir.join("transformers.safetensors"));
    let mut worst = 0.0f32;
    for (i, ((adapted_tokens, adapted), (base_tokens, base_logits))) in
        peft.prompts.iter().zip(&base.prompts).enumerate()
    {
        let rows = prefill_batch(
            model,
            &[(adapted_tokens, Some(adapter.clone())), (base_tokens, None)],
        );
        let what = format!("{family} prompt {i}");
        worst = worst.max(compare(
            &format!("{what} with the adapter"),
            &rows[0],
            adapted,
            0.0,
        ));
        worst = worst.max(compare(
            &format!("{what} without it"),
            &rows[1],
            base_logits,
            0.0,
        ));
    }
    worst
}

#[test]
fn hugging_face_f32_with_peft_adapters_matches_transformers_and_peft() {
    for family in FAMILIES {
        let model = load(&fixture(family).join("hf"), WeightFormat::F32);
        let error = adapted_beside_base(family, model.as_ref());
        println!("{family}: HF f32 + LoRA vs transformers + PEFT, max relative |Δ| {error:.2e}");
        assert!(
            error <= TOLERANCE,
            "{family}: {error:.2e} > {TOLERANCE:.0e}"
        );
    }
}

#[test]
fn gguf_f32_with_peft_adapters_matches_transformers_and_peft() {
    for family in FAMILIES
        .iter()
        .filter(|f| !GGUF_DIFFERS_FROM_HF.contains(f))
    {
        let model = load(&fixture(family).join("model-f32.gguf"), WeightFormat::F32);
        let error = adapted_beside_base(family, model.as_ref());
        println!("{family}: GGUF F32 + LoRA vs transformers + PEFT, max relative |Δ| {error:.2e}");
        assert!(
            error <= TOLERANCE,
            "{family}: {error:.2e} > {TOLERANCE:.0e}"
        );
    }
}

#[test]
fn an_adapter_for_the_other_projection_layout_is_refused_by_name() {
    // Phi-3's fused adapter on Llama's separate projections, and Llama's on Phi-3's.
    let separate = "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj";
    let fused = "qkv_proj, o_proj, gate_up_proj, down_proj";
    for (base, adapter_of, base_modules) in
        [("llama3", "phi3", separate), ("phi3", "llama3", fused)]
    {
        let model = load(&fixture(base).join("hf"), WeightFormat::F32);
        let options = LoraLoadOptions {
            max_rank: 16,
            device: Device::Cpu,
            dtype: DType::F32,
        };
        let dir = fixture(adapter_of).join("lora");
        let error = load_lora_adapter("other", &dir, model.config(), &options).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("the base model has no `")
                && message.contains(&format!("its projections are {base_modules}")),
            "{base} with {adapter_of}'s adapter: {message}"
        );
    }
}
