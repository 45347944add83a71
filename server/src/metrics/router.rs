//! The router contract: the `vllm:` series that inference routers read from a replica, exported
//! whatever `--metrics-namespace` says (llm-d's and the Gateway API Inference Extension's
//! endpoint picker, AIBrix, vLLM's production-stack, Dynamo; docs/metrics.md § Router
//! contract). Under the default `pagoda` namespace they sit beside `pagoda:`'s own series, each
//! read from the same engine snapshot, so nothing is counted twice.

use pagoda_engine::EngineHandle;
use prometheus::{Gauge, Registry};

use super::builder::{self, SeriesBuilder};
use super::engine_collector::EngineCollector;
use super::error::MetricsError;
use super::names::*;

/// Registers the router series the namespace's own set lacks: under `pagoda` the `vllm:`
/// scheduler and KV gauges and the deprecated aliases; under both, `vllm:cache_config_info`.
pub(super) fn register_router_series(
    registry: &Registry,
    engine: &EngineHandle,
    namespace: MetricsNamespace,
    model_name: &str,
) -> Result<(), MetricsError> {
    if namespace != MetricsNamespace::Vllm {
        let collector = EngineCollector::router_series(engine.clone(), model_name)?;
        registry.register(Box::new(collector))?;
    }
    builder::register(registry, cache_config_info(engine, model_name)?)?.set(1.0);
    Ok(())
}

/// vLLM's `cache_config_info`: value 1, the cache's settings as labels (vLLM writes Python's
/// `str()` of each: `True`/`False` for booleans), plus `model_name` as every engine series here
/// carries. The endpoint picker reads `block_size` and `num_gpu_blocks` (the KV pool's blocks on
/// whatever device serves, here the CPU too).
fn cache_config_info(engine: &EngineHandle, model_name: &str) -> Result<Gauge, MetricsError> {
    let info = engine.info();
    let python_bool = |b: bool| if b { "True" } else { "False" };
    let vllm = SeriesBuilder {
        namespace: MetricsNamespace::Vllm,
        model_name,
    };
    let opts = vllm
        .opts(
            CACHE_CONFIG_INFO,
            "Information of the LLMEngine CacheConfig",
        )
        .const_label(LABEL_BLOCK_SIZE, info.block_size.to_string())
        .const_label(LABEL_NUM_GPU_BLOCKS, info.num_kv_blocks.to_string())
        .const_label(LABEL_CACHE_DTYPE, info.kv_cache_dtype.as_str())
        .const_label(
            LABEL_ENABLE_PREFIX_CACHING,
            python_bool(info.enable_prefix_caching),
        );
    Ok(Gauge::with_opts(opts)?)
}
