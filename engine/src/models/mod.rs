//! Model families and their loaders. Models take `&self`; the KV cache and attention metadata are
//! arguments, so no paging logic lives in a model file.

pub mod causal_lm;
pub mod config;
pub mod dtype;
pub mod dummy;
pub mod eos_ids;
pub mod generation_config;
pub mod gguf;
pub mod hf;
pub mod hf_config;
pub mod int8;
pub mod layers;
pub mod linear;
pub mod llama;
pub mod load;
pub mod rotary;
pub mod self_attention;
pub mod weight_format;
pub mod weights;

pub use causal_lm::{CausalLm, ModelInput};
pub use config::{ModelConfig, RopeScaling};
pub use dtype::ModelDType;
pub use load::{
    load_model, load_model_with, LoadFormat, LoadOptions, SUPPORTED_GGUF_ARCHITECTURES,
};
pub use weight_format::WeightFormat;
