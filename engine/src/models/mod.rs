//! Model families and their loaders. Models take `&self`; the KV cache and attention metadata are
//! arguments, so no paging logic lives in a model file.

pub mod config;
pub mod dtype;
pub mod generation_config;
pub mod weight_format;

internal_modules! {
    mod architecture;
    mod causal_lm;
    mod load;
    mod dummy;
    mod families;
    mod features;
    mod fused;
    mod gguf;
    mod grouped_matmul;
    mod hf;
    mod hf_config;
    mod int4;
    mod int8;
    mod layers;
    mod linear;
    mod moe;
    mod mxfp4;
    mod stacked_experts;
    mod decoder;
    mod qk_rows;
    mod rotary;
    mod self_attention;
    mod vnni;
    mod weights;
}

pub use config::{ModelConfig, RopeScaling};
pub use dtype::ModelDType;
pub use load::LoadFormat;
pub use weight_format::WeightFormat;
// Running a model needs the attention internals: loading and the model trait are the engine's
// own business, public only with the `testing` feature.
pub use features::{Activation, DecoderFeatures, MoeSpec};
#[cfg(not(feature = "testing"))]
pub(crate) use {
    causal_lm::{CausalLm, ModelInput},
    load::load_model_with,
};
#[cfg(feature = "testing")]
pub use {
    causal_lm::{CausalLm, ModelInput},
    load::{load_model, load_model_with, LoadOptions},
};
