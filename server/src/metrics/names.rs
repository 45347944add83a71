//! Series names and labels. Every engine series has one base name, exported as
//! `<namespace>:<base>`: `pagoda:time_to_first_token_seconds` or, with `--metrics-namespace vllm`,
//! exactly vLLM's `vllm:time_to_first_token_seconds`. The HTTP series carry no namespace, as
//! prometheus-fastapi-instrumentator exports them from vLLM.

use std::fmt;
use std::str::FromStr;

use super::error::MetricsError;

/// The prefix of the engine series (`--metrics-namespace`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum MetricsNamespace {
    /// `pagoda:…`, plus the pagoda-only series.
    #[default]
    Pagoda,
    /// `vllm:…`: vLLM's names and nothing else, so its dashboards, alerts and autoscalers work.
    Vllm,
}

impl MetricsNamespace {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricsNamespace::Pagoda => "pagoda",
            MetricsNamespace::Vllm => "vllm",
        }
    }

    /// The exported name of an engine series: `pagoda:<base>` or `vllm:<base>`.
    pub fn series(self, base: &str) -> String {
        format!("{}:{base}", self.as_str())
    }

    /// Whether the series vLLM does not have are exported (only under `pagoda`).
    pub fn exports_pagoda_extras(self) -> bool {
        self == MetricsNamespace::Pagoda
    }
}

impl fmt::Display for MetricsNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MetricsNamespace {
    type Err = MetricsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pagoda" => Ok(MetricsNamespace::Pagoda),
            "vllm" => Ok(MetricsNamespace::Vllm),
            other => Err(MetricsError::UnknownNamespace(other.to_string())),
        }
    }
}

// Labels.
pub const LABEL_MODEL_NAME: &str = "model_name";
/// vLLM numbers its engine cores; pagoda has one, so this is always `"0"`.
pub const LABEL_ENGINE: &str = "engine";
pub const ENGINE_INDEX: &str = "0";
pub const LABEL_FINISHED_REASON: &str = "finished_reason";
pub const LABEL_HANDLER: &str = "handler";
pub const LABEL_METHOD: &str = "method";
pub const LABEL_STATUS: &str = "status";

// Request latencies (histograms, seconds).
pub const TIME_TO_FIRST_TOKEN: &str = "time_to_first_token_seconds";
pub const INTER_TOKEN_LATENCY: &str = "inter_token_latency_seconds";
pub const REQUEST_TIME_PER_OUTPUT_TOKEN: &str = "request_time_per_output_token_seconds";
pub const E2E_REQUEST_LATENCY: &str = "e2e_request_latency_seconds";
pub const REQUEST_QUEUE_TIME: &str = "request_queue_time_seconds";
pub const REQUEST_INFERENCE_TIME: &str = "request_inference_time_seconds";
pub const REQUEST_PREFILL_TIME: &str = "request_prefill_time_seconds";
pub const REQUEST_DECODE_TIME: &str = "request_decode_time_seconds";

// Request sizes and parameters (histograms, tokens or counts).
pub const REQUEST_PROMPT_TOKENS: &str = "request_prompt_tokens";
pub const REQUEST_GENERATION_TOKENS: &str = "request_generation_tokens";
pub const REQUEST_PREFILL_KV_COMPUTED_TOKENS: &str = "request_prefill_kv_computed_tokens";
pub const REQUEST_MAX_NUM_GENERATION_TOKENS: &str = "request_max_num_generation_tokens";
pub const REQUEST_PARAMS_N: &str = "request_params_n";
pub const REQUEST_PARAMS_MAX_TOKENS: &str = "request_params_max_tokens";
pub const REQUEST_NUM_PREEMPTIONS: &str = "request_num_preemptions";

/// Finished sequences by `finished_reason` (counter).
pub const REQUEST_SUCCESS: &str = "request_success_total";

// Engine state, read from `EngineStats` at scrape time.
pub const NUM_REQUESTS_RUNNING: &str = "num_requests_running";
pub const NUM_REQUESTS_WAITING: &str = "num_requests_waiting";
pub const KV_CACHE_USAGE_PERC: &str = "kv_cache_usage_perc";
pub const NUM_PREEMPTIONS: &str = "num_preemptions_total";
pub const PROMPT_TOKENS: &str = "prompt_tokens_total";
pub const GENERATION_TOKENS: &str = "generation_tokens_total";
pub const PREFIX_CACHE_QUERIES: &str = "prefix_cache_queries_total";
pub const PREFIX_CACHE_HITS: &str = "prefix_cache_hits_total";
pub const PROMPT_TOKENS_CACHED: &str = "prompt_tokens_cached_total";
/// Engine steps by their number of tokens (histogram; vLLM's name ends in `_total`).
pub const ITERATION_TOKENS: &str = "iteration_tokens_total";

// vLLM's deprecated aliases, which AIBrix and production-stack read (always under `vllm:`).
pub const GPU_CACHE_USAGE_PERC: &str = "gpu_cache_usage_perc";
pub const GPU_PREFIX_CACHE_QUERIES: &str = "gpu_prefix_cache_queries_total";
pub const GPU_PREFIX_CACHE_HITS: &str = "gpu_prefix_cache_hits_total";

/// vLLM's info gauge of the KV cache's configuration (value 1; the settings are labels), which
/// the endpoint picker reads `block_size` and `num_gpu_blocks` from. Always under `vllm:`.
pub const CACHE_CONFIG_INFO: &str = "cache_config_info";
pub const LABEL_BLOCK_SIZE: &str = "block_size";
pub const LABEL_NUM_GPU_BLOCKS: &str = "num_gpu_blocks";
pub const LABEL_CACHE_DTYPE: &str = "cache_dtype";
pub const LABEL_ENABLE_PREFIX_CACHING: &str = "enable_prefix_caching";

// Speculative decoding (counters, exported when the engine speculates; vLLM's names).
pub const SPEC_DECODE_NUM_DRAFTS: &str = "spec_decode_num_drafts_total";
pub const SPEC_DECODE_NUM_DRAFT_TOKENS: &str = "spec_decode_num_draft_tokens_total";
pub const SPEC_DECODE_NUM_ACCEPTED_TOKENS: &str = "spec_decode_num_accepted_tokens_total";
/// By `position` (0-based) in the proposal.
pub const SPEC_DECODE_NUM_ACCEPTED_TOKENS_PER_POS: &str =
    "spec_decode_num_accepted_tokens_per_pos_total";
pub const LABEL_POSITION: &str = "position";

// Pagoda-only engine series (exported under `pagoda` only).
pub const NUM_KV_BLOCKS: &str = "num_kv_blocks";
pub const NUM_KV_BLOCKS_USED: &str = "num_kv_blocks_used";
pub const NUM_CACHED_KV_BLOCKS: &str = "num_cached_kv_blocks";
pub const PREFIX_CACHE_EVICTIONS: &str = "prefix_cache_evictions_total";
pub const KV_EVENT_BATCHES: &str = "kv_event_batches_total";
pub const KV_EVENT_BATCHES_DROPPED: &str = "kv_event_batches_dropped_total";
pub const COMPUTED_TOKENS: &str = "computed_tokens_total";
pub const ENGINE_STEPS: &str = "engine_steps_total";
pub const ITL_TARGET: &str = "itl_target_seconds";
pub const PREFILL_TOKEN_COST: &str = "prefill_token_cost_seconds";

// LoRA adapters.
/// vLLM's info gauge: the adapters of running and waiting requests, and `--max-loras`, as labels.
pub const LORA_REQUESTS_INFO: &str = "lora_requests_info";
pub const LABEL_RUNNING_LORA_ADAPTERS: &str = "running_lora_adapters";
pub const LABEL_WAITING_LORA_ADAPTERS: &str = "waiting_lora_adapters";
pub const LABEL_MAX_LORA: &str = "max_lora";
/// 1 per adapter held loaded: `pagoda:…{adapter}`, and always vLLM's
/// `vllm:…{adapter_name,level,pinned}` (vLLM PR #45411, for llm-d's LoRA affinity).
pub const LORA_ADAPTER_LOADED: &str = "lora_adapter_loaded";
pub const LABEL_ADAPTER: &str = "adapter";
pub const LABEL_ADAPTER_NAME: &str = "adapter_name";
/// Where the adapter's weights are held: `gpu` or `cpu` (the serving device; pagoda has one tier).
pub const LABEL_LEVEL: &str = "level";
/// Whether the adapter is exempt from eviction: always `false` (pagoda evicts by LRU only).
pub const LABEL_PINNED: &str = "pinned";
/// Adapters held loaded on each tier (vLLM's names; always under `vllm:`).
pub const NUM_GPU_LOADED_LORA_ADAPTERS: &str = "num_gpu_loaded_lora_adapters";
pub const NUM_CPU_LOADED_LORA_ADAPTERS: &str = "num_cpu_loaded_lora_adapters";

// HTTP series: never prefixed (prometheus-fastapi-instrumentator's names).
pub const HTTP_REQUESTS: &str = "http_requests_total";
pub const HTTP_REQUEST_DURATION: &str = "http_request_duration_seconds";
pub const HTTP_REQUEST_DURATION_HIGHR: &str = "http_request_duration_highr_seconds";
