//! `LoraRegistry` with `--max-cpu-loras` 1 on a tiny model: the least recently used adapter is
//! dropped from memory and loaded again (as a new load) when asked for; a request holding an
//! evicted or removed adapter keeps it; names of served models and duplicates are refused.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use pagoda_engine::config::LoraLimits;
use pagoda_engine::testing::{TinyLlamaSpec, TinyLoraSpec};
use pagoda_engine::{start_engine, EngineConfig};
use pagoda_server::lora::{LoraModuleSpec, LoraRegistry, LoraRegistryError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_least_recently_used_adapter_is_evicted_and_reloaded_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny.gguf");
    TinyLlamaSpec::default().write_gguf(&model).unwrap();
    let config = EngineConfig {
        kv_cache_memory_bytes: Some(8 << 20),
        lora: Some(LoraLimits::default()),
        ..EngineConfig::default()
    };
    let engine = start_engine(config, &model).unwrap();
    let shape = engine.info().model.clone();
    let spec = |name: &str| {
        let path = dir.path().join(name);
        TinyLoraSpec::default().write(&shape, &path).unwrap();
        LoraModuleSpec {
            name: name.into(),
            path,
            base_model_name: None,
        }
    };
    let registry = LoraRegistry::new(engine.clone(), vec!["tiny".into()], 1);
    let first_a = registry.add(spec("a")).await.unwrap();
    registry.add(spec("b")).await.unwrap();
    assert_eq!(
        registry.loaded_names(),
        ["b"],
        "a was the least recently used"
    );
    assert!(registry.contains("a"));

    let held = Arc::clone(&first_a);
    let again_a = registry.get("a").await.unwrap().unwrap();
    assert_ne!(
        again_a.id(),
        first_a.id(),
        "a was loaded again from its directory"
    );
    assert_eq!(registry.loaded_names(), ["a"]);
    assert_eq!(held.name(), "a", "a request holding the old load keeps it");

    assert_eq!(registry.get("nope").await.unwrap().map(|a| a.id()), None);
    assert!(matches!(
        registry.add(spec("b")).await,
        Err(LoraRegistryError::AlreadyLoaded(_))
    ));
    assert!(matches!(
        registry.add(spec("tiny")).await,
        Err(LoraRegistryError::BaseModelName(_))
    ));
    // vLLM's `load_inplace`: the name takes a new load; holders of the old one keep it.
    let old_b = registry.get("b").await.unwrap().unwrap();
    let new_b = registry.replace(spec("b")).await.unwrap();
    assert_ne!(new_b.id(), old_b.id());
    assert_eq!(registry.get("b").await.unwrap().unwrap().id(), new_b.id());
    assert!(matches!(
        registry.replace(spec("tiny")).await,
        Err(LoraRegistryError::BaseModelName(_))
    ));
    let unnamed = LoraModuleSpec {
        name: " ".into(),
        ..spec("c")
    };
    assert!(matches!(
        registry.add(unnamed).await,
        Err(LoraRegistryError::InvalidName(_))
    ));
    registry.remove("a").unwrap();
    assert!(matches!(
        registry.remove("a"),
        Err(LoraRegistryError::NotFound(_))
    ));
    let names: Vec<_> = registry
        .list()
        .into_iter()
        .map(|l| (l.name, l.parent))
        .collect();
    assert_eq!(names, [("b".to_string(), "tiny".to_string())]);
    engine.shutdown();
}
