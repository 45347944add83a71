//! The LoRA registry at start: `--enable-lora`, `--max-cpu-loras` and `--lora-modules` checked
//! together, every listed adapter loaded (a broken one stops the start, naming the problem), and
//! the LoRA metrics registered.

use std::sync::Arc;

use anyhow::{bail, Context};

use crate::args::ServerArgs;
use crate::lora::LoraRegistry;
use crate::state::AppState;

/// The registry, or `None` without `--enable-lora`.
pub fn lora_registry(
    args: &ServerArgs,
    state: &AppState,
) -> anyhow::Result<Option<Arc<LoraRegistry>>> {
    let engine = &args.engine;
    if !engine.enable_lora {
        if !args.lora_modules.is_empty() {
            bail!("--lora-modules needs --enable-lora");
        }
        return Ok(None);
    }
    if !state.engine.serves_lora() {
        bail!("--enable-lora needs a model (the mock engine cannot run adapters)");
    }
    let max_cpu_loras = args.max_cpu_loras.unwrap_or(engine.max_loras);
    if max_cpu_loras < engine.max_loras {
        bail!(
            "--max-cpu-loras ({max_cpu_loras}) must be at least --max-loras ({})",
            engine.max_loras
        );
    }
    let registry = Arc::new(LoraRegistry::new(
        state.engine.clone(),
        state.served_model_names.clone(),
        max_cpu_loras,
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime to load the LoRA adapters")?;
    for spec in &args.lora_modules {
        let name = spec.name.clone();
        runtime
            .block_on(registry.add(spec.clone()))
            .with_context(|| format!("--lora-modules {name}"))?;
        state.metrics.register_model(&name);
    }
    state.metrics.register_lora(
        state.engine.clone(),
        Arc::clone(&registry),
        engine.max_loras,
    )?;
    Ok(Some(registry))
}
