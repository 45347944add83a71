//! What every handler shares: the engine, the model's text side, metrics and the server's policy.

use pagoda_text::reasoning::ReasoningFormat;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pagoda_engine::{EngineHandle, LoraAdapter, ValidRequest};
use pagoda_structured::GrammarCompiler;
use pagoda_text::template::ChatTemplate;
use pagoda_text::tokenizer::TextTokenizer;

use crate::chat_prompt::{chat_prompt_ids, ChatPolicy, Conversation};
use crate::engine_health::EngineHealth;
use crate::http_limits::HttpLimits;
use crate::lora::LoraRegistry;
use crate::metrics::Metrics;
use crate::openai::admission::Admission;
use crate::openai::choice::{ChoiceRun, Submission};
use crate::openai::choice_context::ChoiceContext;
use crate::openai::error::ApiError;
use crate::openai::logprob::TokenNaming;
use crate::openai::params::Echo;
use crate::openai::params::{GenerationParams, ParamDefaults};
use crate::openai::prompt_side::{EchoPrompt, PromptSide};
use crate::openai::responses::background::BackgroundRuns;
use crate::openai::responses::store::ResponseStore;
use crate::openai::tools::ToolCallConfig;
use crate::timeline::{RequestTrace, TimelineWriter};

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
    /// Streamed token deltas go out this many tokens at a time at least (`--stream-interval`).
    pub stream_interval: usize,
    /// Every stream ends with a usage chunk, asked for or not (vLLM's
    /// `--enable-force-include-usage`).
    pub force_include_usage: bool,
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
    /// The Responses API's stored responses (`previous_response_id`, `GET /v1/responses/{id}`).
    pub responses: Arc<ResponseStore>,
    /// Background responses' event logs (`background: true`).
    pub background: Arc<BackgroundRuns>,
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
            stream_interval: 1,
            force_include_usage: false,
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
            responses: Arc::new(ResponseStore::default()),
            background: Arc::new(BackgroundRuns::default()),
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

    /// Checks a `model` that needs no adapter loaded (tokenizing): absent, a served name or an
    /// adapter's name.
    pub fn check_model(&self, requested: Option<&str>) -> Result<(), ApiError> {
        match requested {
            None => Ok(()),
            Some(name) if self.served_model_names.iter().any(|n| n == name) => Ok(()),
            Some(name) if self.lora.as_ref().is_some_and(|r| r.contains(name)) => Ok(()),
            Some(name) => Err(model_not_found(name)),
        }
    }

    /// The request's `model`: absent or a served name means the base model; an adapter's name
    /// selects the adapter (loaded again first if it was evicted); anything else is a 404.
    pub async fn select_model(
        &self,
        requested: Option<&str>,
    ) -> Result<Option<Arc<LoraAdapter>>, ApiError> {
        let Some(name) = requested else {
            return Ok(None);
        };
        if self.served_model_names.iter().any(|n| n == name) {
            return Ok(None);
        }
        if let Some(registry) = &self.lora {
            match registry.get(name).await {
                Ok(Some(adapter)) => return Ok(Some(adapter)),
                Ok(None) => {}
                Err(error) => return Err(ApiError::invalid("model", error.to_string())),
            }
        }
        Err(model_not_found(name))
    }

    /// The name a request's responses and metrics carry: its adapter's, or the served name.
    pub fn response_model_name<'a>(&'a self, params: &'a GenerationParams) -> &'a str {
        params
            .lora
            .as_deref()
            .map_or_else(|| self.model_name(), LoraAdapter::name)
    }

    /// The prompt ids of a conversation, under this server's chat policy (blocking: call it off
    /// the async threads).
    pub fn chat_prompt_ids(
        &self,
        conversation: Conversation<'_>,
        add_special_tokens: bool,
    ) -> Result<Vec<u32>, ApiError> {
        chat_prompt_ids(
            &self.template,
            &self.tokenizer,
            &self.chat_policy,
            conversation,
            add_special_tokens,
        )
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// From now on new generation requests get 503.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Checks one prompt with the request's parameters against the engine, once: the only way
    /// to the [`ValidRequest`] that [`AppState::start_choices`] submits.
    pub fn validate_prompt(
        &self,
        prompt: Vec<u32>,
        params: &GenerationParams,
    ) -> Result<ValidRequest, ApiError> {
        let request = params.engine_request(self.engine.next_request_id(), prompt);
        Ok(self.engine.validate(request)?)
    }

    /// Submits the `n` choices of one checked prompt; choice `i` gets index `first_index + i`.
    pub fn start_choices(
        &self,
        request: &ValidRequest,
        params: &GenerationParams,
        first_index: usize,
        want_logprobs: bool,
        echo: Option<Arc<EchoPrompt>>,
    ) -> Result<Vec<ChoiceRun>, ApiError> {
        if self.is_draining() {
            return Err(ApiError::shutting_down());
        }
        let slots = self.admission.try_admit(params.n)?;
        let context = ChoiceContext {
            engine: self.engine.clone(),
            tokenizer: Arc::clone(&self.tokenizer),
            metrics: self.metrics.for_model(self.response_model_name(params)),
            stop_strings: params.stop_strings.clone(),
            min_tokens: params.stop.min_tokens,
            stop_token_ids: params.ending_token_ids.clone(),
            listed_stop_token_ids: params.listed_stop_token_ids.clone(),
            include_stop_str_in_output: params.include_stop_str_in_output,
            skip_special_tokens: params.skip_special_tokens,
            want_logprobs,
            naming: TokenNaming::of(params.tokens_as_ids),
            echo_only: params.echo == Some(Echo::PromptOnly),
            stream_interval: match params.stream {
                true => params
                    .stream_interval
                    .unwrap_or(1)
                    .max(self.stream_interval),
                false => 1,
            },
        };
        let mut prompt = PromptSide::new(
            params.prompt_logprobs,
            echo,
            params.sampling.logprobs.filter(|_| want_logprobs),
        );
        prompt.naming = context.naming;
        if params.return_token_ids {
            prompt.token_ids = Some(request.request().prompt.as_slice().into());
        }
        let submission = Submission {
            at: request.request().arrival,
            num_prompt_tokens: request.request().prompt.len(),
        };
        let mut runs = Vec::with_capacity(params.n);
        for (offset, slot) in slots.into_iter().enumerate() {
            let choice = if offset == 0 {
                request.clone()
            } else {
                request.with_id_and_seed(
                    self.engine.next_request_id(),
                    params.seed_for_choice(offset),
                )
            };
            // Dropping the runs already started aborts them if a later one is refused.
            let stream = self.engine.submit(choice)?;
            runs.push(ChoiceRun::new(
                first_index + offset,
                stream,
                context.clone(),
                slot,
                submission,
                prompt.clone(),
            ));
        }
        Ok(runs)
    }
}

pub fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// 404 for a `model` that is neither served nor an adapter (OpenAI's `model_not_found`).
pub(crate) fn model_not_found(name: &str) -> ApiError {
    ApiError {
        param: Some("model".into()),
        code: Some("model_not_found"),
        ..ApiError::not_found(format!("The model `{name}` does not exist."))
    }
}
