//! What every handler shares: the engine, the model's text side, metrics and the server's policy.

use pagoda_text::reasoning::ReasoningFormat;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pagoda_engine::EngineHandle;
use pagoda_structured::GrammarCompiler;
use pagoda_text::template::ChatTemplate;
use pagoda_text::tokenizer::TextTokenizer;

use crate::admission::Admission;
use crate::chat_prompt::ChatPolicy;
use crate::engine_health::EngineHealth;
use crate::generation_defaults::ParamDefaults;
use crate::http_limits::HttpLimits;
use crate::lora::LoraRegistry;
use crate::metrics::Metrics;
use crate::timeline::{RequestTrace, TimelineWriter};
use crate::tool_call_config::ToolCallConfig;
use crate::unix_time::unix_now_s;

/// Default time between keep-alive comments on an idle SSE stream (`--sse-keep-alive`).
pub const DEFAULT_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// Shared by all requests; cheap to clone.
pub type SharedState = Arc<AppState>;

#[derive(Debug)]
pub struct AppState {
    pub engine: EngineHandle,
    pub tokenizer: Arc<TextTokenizer>,
    pub template: ChatTemplate,
    /// Names clients may use in `model`; the first is the one responses carry.
    pub served_model_names: Vec<String>,
    /// Where the model came from (shown as `root` in `/v1/models`).
    pub model_root: String,
    pub defaults: ParamDefaults,
    pub metrics: Metrics,
    pub admission: Admission,
    pub api_key: Option<String>,
    pub log_requests: bool,
    /// Between keep-alive comments on an idle SSE stream.
    pub sse_keep_alive: Duration,
    /// The role of chat replies that follow a generation prompt (vLLM's `--response-role`).
    pub response_role: String,
    /// Body size and read-time limits (connection limits are the listener's).
    pub http_limits: HttpLimits,
    /// Which roles chat messages may use and whether their content may carry control tokens.
    pub chat_policy: ChatPolicy,
    /// Whether the engine is making progress (see `watchdog`).
    pub engine_health: EngineHealth,
    /// Compiles structured-output grammars for the model's vocabulary (`None`: the tokenizer
    /// could not be prepared; such requests get a 400).
    pub grammar_compiler: Option<Arc<GrammarCompiler>>,
    /// How tool calls are read from the output (`--tool-call-parser`, `--enable-auto-tool-choice`).
    pub tool_calls: ToolCallConfig,
    /// How a reasoning model's thinking is split from its answer (`--reasoning-parser`).
    pub reasoning: Option<ReasoningFormat>,
    /// The LoRA adapters served by name (`None`: LoRA is off).
    pub lora: Option<Arc<LoraRegistry>>,
    /// Whether `/v1/load_lora_adapter` and `/v1/unload_lora_adapter` are offered.
    pub runtime_lora_updating: bool,
    /// `/openapi.json` needs the API key too (`--openapi-behind-api-key`).
    pub openapi_behind_api_key: bool,
    /// The OpenAPI document `/openapi.json` answers (`crate::openapi::document`).
    pub openapi_json: bytes::Bytes,
    pub started_unix_s: u64,
    /// `--request-timeline`: where each request's timeline line goes (`None`: not kept).
    pub timeline: Option<TimelineWriter>,
    draining: AtomicBool,
}

/// What an [`AppState`] is built from: the engine and the model's text side, with the server's
/// policy around them.
#[derive(Debug)]
pub struct AppParts {
    pub engine: EngineHandle,
    pub tokenizer: Arc<TextTokenizer>,
    pub template: ChatTemplate,
    pub served_model_names: Vec<String>,
    pub model_root: String,
    pub defaults: ParamDefaults,
    pub metrics: Metrics,
    pub admission: Admission,
}

impl AppState {
    /// A state with no API key, request logging on and the default SSE keep-alive.
    pub fn new(parts: AppParts) -> Self {
        Self {
            engine: parts.engine,
            tokenizer: parts.tokenizer,
            template: parts.template,
            served_model_names: parts.served_model_names,
            model_root: parts.model_root,
            defaults: parts.defaults,
            metrics: parts.metrics,
            admission: parts.admission,
            api_key: None,
            log_requests: true,
            sse_keep_alive: DEFAULT_KEEP_ALIVE_INTERVAL,
            response_role: "assistant".into(),
            http_limits: HttpLimits::default(),
            chat_policy: ChatPolicy::default(),
            engine_health: EngineHealth::default(),
            grammar_compiler: None,
            tool_calls: ToolCallConfig::default(),
            reasoning: None,
            lora: None,
            runtime_lora_updating: false,
            openapi_behind_api_key: false,
            openapi_json: bytes::Bytes::from_static(b"{}"),
            started_unix_s: unix_now_s(),
            timeline: None,
            draining: AtomicBool::new(false),
        }
    }

    /// A timeline for a request received at `received`, when `--request-timeline` keeps them.
    pub fn request_trace(
        &self,
        request_id: &str,
        received: Instant,
        stream: bool,
    ) -> Option<RequestTrace> {
        let writer = self.timeline.clone()?;
        Some(RequestTrace::new(
            writer,
            request_id.to_string(),
            received,
            stream,
        ))
    }

    /// The name responses carry.
    pub fn model_name(&self) -> &str {
        self.served_model_names
            .first()
            .map(String::as_str)
            .unwrap_or("pagoda")
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// From now on new generation requests get 503.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }
}
