//! LoRA adapters (PEFT): loading a directory for the base model (`load.rs`, `config.rs`), the
//! loaded adapter as the layers use it (`adapter.rs`), and a step's adapter groups (`batch.rs`),
//! which add each adapter's low-rank contribution to its own rows of a mixed batch.

pub mod adapter;
pub mod batch;
pub mod config;
pub mod host;
pub mod load;

pub use adapter::{LoraAdapter, LoraId};
pub use config::{AdapterConfig, LoraTarget};
pub use load::{load_lora_adapter, LoraLoadOptions};
