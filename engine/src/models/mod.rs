//! Model families and their loaders. Models take `&self`; the KV cache and attention metadata are
//! arguments, so no paging logic lives in a model file.

pub mod causal_lm;
pub mod config;
pub mod dtype;
pub mod generation_config;
pub mod load;
pub mod weight_format;

internal_modules! {
    mod dummy;
    mod eos_ids;
    mod gguf;
    mod hf;
    mod hf_config;
    mod int8;
    mod layers;
    mod linear;
    mod llama;
    mod rotary;
    mod self_attention;
    mod weights;
}

pub use causal_lm::{CausalLm, ModelInput};
pub use config::{ModelConfig, RopeScaling};
pub use dtype::ModelDType;
pub use load::{
    load_model, load_model_with, LoadFormat, LoadOptions, SUPPORTED_GGUF_ARCHITECTURES,
};
pub use weight_format::WeightFormat;
