//! Test support: tiny random-weight models written as real files at test time (GGUF and Hugging
//! Face directories), and the converter that turns a GGUF model into a Hugging Face directory.

pub mod gguf_to_hf;
pub mod tiny_gguf;
pub mod tiny_hf;
pub mod tiny_lora;

pub use gguf_to_hf::{convert_gguf_to_hf, last_token_logits, prefill_plan};
pub use tiny_gguf::{write_gguf, TinyLlamaSpec};
pub use tiny_hf::{write_hf_dir, Family, TinyHfSpec};
pub use tiny_lora::{lora_last_token_logits, write_merged_hf_dir, TinyLoraSpec};
