//! LoRA adapters behind the API: `--lora-modules` values (`modules.rs`) and the registry of
//! adapters by name (`registry.rs`); the engine loads and runs them.

pub mod modules;
pub mod registry;

pub use modules::LoraModuleSpec;
pub use registry::{AdapterListing, LoraRegistry, LoraRegistryError};
