//! `LoraRegistry`: the adapters this server knows by name (from `--lora-modules` and runtime
//! loads), of which at most `--max-cpu-loras` are held loaded; the least recently used ones
//! beyond are dropped and loaded again from their directory when next asked for. A request holds
//! its adapter (`Arc`), so neither eviction nor unloading disturbs a request in flight. Loading
//! reads files: it runs on a blocking thread, and concurrent requests for an adapter being
//! loaded wait for that one load.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use pagoda_engine::{EngineError, EngineHandle, LoraAdapter};
use tokio::sync::OnceCell;

use super::modules::{check_name, LoraModuleSpec};

/// What can go wrong with a named adapter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoraRegistryError {
    #[error("The lora adapter '{0}' cannot be found.")]
    NotFound(String),
    #[error("The lora adapter '{0}' has already been loaded.")]
    AlreadyLoaded(String),
    #[error("`{0}` is the base model's name, not an adapter's.")]
    BaseModelName(String),
    /// The name cannot name an adapter (empty, too long, whitespace).
    #[error("{0}")]
    InvalidName(String),
    /// The adapter's directory cannot be served (the message names the file, field or tensor).
    #[error("{0}")]
    Invalid(String),
    /// Nothing is at the adapter's path (vLLM's message and status).
    #[error("Loading lora {name} failed: No adapter found for {}", path.display())]
    PathNotFound { name: String, path: PathBuf },
}

/// An adapter as `/v1/models` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterListing {
    pub name: String,
    pub path: PathBuf,
    pub parent: String,
}

#[derive(Debug)]
struct Entry {
    spec: LoraModuleSpec,
    /// The loaded adapter; replaced by an empty cell when evicted.
    loaded: Arc<OnceCell<Arc<LoraAdapter>>>,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Entries {
    by_name: HashMap<String, Entry>,
    clock: u64,
}

#[derive(Debug)]
pub struct LoraRegistry {
    engine: EngineHandle,
    base_model_names: Vec<String>,
    max_cpu_loras: usize,
    entries: Mutex<Entries>,
}

impl LoraRegistry {
    /// An empty registry for `engine`'s model; `base_model_names` are the served names (the
    /// first is an adapter's default `parent`).
    pub fn new(engine: EngineHandle, base_model_names: Vec<String>, max_cpu_loras: usize) -> Self {
        Self {
            engine,
            base_model_names,
            max_cpu_loras: max_cpu_loras.max(1),
            entries: Mutex::new(Entries::default()),
        }
    }

    pub fn max_cpu_loras(&self) -> usize {
        self.max_cpu_loras
    }

    /// Loads an adapter now and registers it under its name (at start and from
    /// `/v1/load_lora_adapter`).
    pub async fn add(&self, spec: LoraModuleSpec) -> Result<Arc<LoraAdapter>, LoraRegistryError> {
        self.check_new_name(&spec.name)?;
        if self.lock().by_name.contains_key(&spec.name) {
            return Err(LoraRegistryError::AlreadyLoaded(spec.name));
        }
        let adapter = self.load_blocking(&spec.name, &spec.path).await?;
        let mut entries = self.lock();
        if entries.by_name.contains_key(&spec.name) {
            return Err(LoraRegistryError::AlreadyLoaded(spec.name));
        }
        self.register(&mut entries, spec, &adapter);
        Ok(adapter)
    }

    /// Loads an adapter and registers it under its name, in place of one already there (vLLM's
    /// `load_inplace`); requests holding the old one finish with it, and the two never share
    /// cached prefixes (each load has its own id).
    pub async fn replace(
        &self,
        spec: LoraModuleSpec,
    ) -> Result<Arc<LoraAdapter>, LoraRegistryError> {
        self.check_new_name(&spec.name)?;
        let adapter = self.load_blocking(&spec.name, &spec.path).await?;
        let mut entries = self.lock();
        entries.by_name.remove(&spec.name);
        self.register(&mut entries, spec, &adapter);
        Ok(adapter)
    }

    fn check_new_name(&self, name: &str) -> Result<(), LoraRegistryError> {
        check_name(name).map_err(LoraRegistryError::InvalidName)?;
        if self.base_model_names.iter().any(|base| base == name) {
            return Err(LoraRegistryError::BaseModelName(name.to_string()));
        }
        Ok(())
    }

    /// Enters a loaded adapter, evicting the least recently used beyond `max_cpu_loras`.
    fn register(&self, entries: &mut Entries, spec: LoraModuleSpec, adapter: &Arc<LoraAdapter>) {
        let cell = Arc::new(OnceCell::new_with(Some(Arc::clone(adapter))));
        let name = spec.name.clone();
        entries.clock += 1;
        let last_used = entries.clock;
        entries.by_name.insert(
            name.clone(),
            Entry {
                spec,
                loaded: cell,
                last_used,
            },
        );
        self.evict_beyond_capacity(entries, &name);
    }

    /// Forgets an adapter; requests already holding it finish with it.
    pub fn remove(&self, name: &str) -> Result<(), LoraRegistryError> {
        match self.lock().by_name.remove(name) {
            Some(_) => Ok(()),
            None => Err(LoraRegistryError::NotFound(name.to_string())),
        }
    }

    /// The adapter registered as `name`, loaded again if it was evicted; `Ok(None)` when no
    /// adapter has that name.
    pub async fn get(&self, name: &str) -> Result<Option<Arc<LoraAdapter>>, LoraRegistryError> {
        let (cell, path) = {
            let mut entries = self.lock();
            entries.clock += 1;
            let now = entries.clock;
            let Some(entry) = entries.by_name.get_mut(name) else {
                return Ok(None);
            };
            entry.last_used = now;
            if let Some(adapter) = entry.loaded.get() {
                return Ok(Some(Arc::clone(adapter)));
            }
            (Arc::clone(&entry.loaded), entry.spec.path.clone())
        };
        let adapter = cell
            .get_or_try_init(|| self.load_blocking(name, &path))
            .await?
            .clone();
        // Only a load can take the loaded adapters past the limit.
        self.evict_beyond_capacity(&mut self.lock(), name);
        Ok(Some(adapter))
    }

    /// Whether an adapter is registered as `name` (loaded or not).
    pub fn contains(&self, name: &str) -> bool {
        self.lock().by_name.contains_key(name)
    }

    /// Every registered adapter, by name.
    pub fn list(&self) -> Vec<AdapterListing> {
        let entries = self.lock();
        let mut listings: Vec<_> = entries
            .by_name
            .values()
            .map(|e| AdapterListing {
                name: e.spec.name.clone(),
                path: e.spec.path.clone(),
                parent: e
                    .spec
                    .base_model_name
                    .clone()
                    .unwrap_or_else(|| self.base_model_names[0].clone()),
            })
            .collect();
        listings.sort_by(|a, b| a.name.cmp(&b.name));
        listings
    }

    /// Names of the adapters held loaded now, sorted.
    pub fn loaded_names(&self) -> Vec<String> {
        let entries = self.lock();
        let mut names: Vec<_> = entries
            .by_name
            .iter()
            .filter(|(_, e)| e.loaded.initialized())
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    async fn load_blocking(
        &self,
        name: &str,
        path: &Path,
    ) -> Result<Arc<LoraAdapter>, LoraRegistryError> {
        if !path.exists() {
            return Err(LoraRegistryError::PathNotFound {
                name: name.to_string(),
                path: path.to_path_buf(),
            });
        }
        let engine = self.engine.clone();
        let (name, path) = (name.to_string(), path.to_path_buf());
        let started = std::time::Instant::now();
        let loaded = tokio::task::spawn_blocking(move || engine.load_lora_adapter(&name, &path))
            .await
            .map_err(|e| LoraRegistryError::Invalid(format!("the adapter load failed: {e}")))?;
        let adapter = loaded.map_err(|e| match e {
            EngineError::Adapter(message) => LoraRegistryError::Invalid(message),
            other => LoraRegistryError::Invalid(other.to_string()),
        })?;
        tracing::info!(
            adapter = adapter.name(),
            rank = adapter.rank(),
            num_modules = adapter.num_modules(),
            "loaded LoRA adapter in {:.3} s",
            started.elapsed().as_secs_f64()
        );
        Ok(adapter)
    }

    /// Drops the least recently used loaded adapters (never `keep`) beyond `max_cpu_loras`.
    fn evict_beyond_capacity(&self, entries: &mut Entries, keep: &str) {
        loop {
            let loaded: Vec<(&String, u64)> = entries
                .by_name
                .iter()
                .filter(|(_, e)| e.loaded.initialized())
                .map(|(name, e)| (name, e.last_used))
                .collect();
            if loaded.len() <= self.max_cpu_loras {
                return;
            }
            let Some(victim) = loaded
                .into_iter()
                .filter(|(name, _)| name.as_str() != keep)
                .min_by_key(|(_, used)| *used)
                .map(|(name, _)| name.clone())
            else {
                return;
            };
            if let Some(entry) = entries.by_name.get_mut(&victim) {
                entry.loaded = Arc::new(OnceCell::new());
                tracing::info!(adapter = victim, "evicted LoRA adapter (--max-cpu-loras)");
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}
