//! Startup and shutdown: from flags to a listening server, and from SIGTERM to exit 0.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use pagoda_engine::{start_engine, DeviceSpec, EngineConfig, EngineHandle};
use pagoda_structured::{CompileLimits, GrammarCompiler};
use pagoda_text::prompt_side::{extra_stop_token_ids, PromptSide};
use pagoda_text::reasoning::ReasoningFormat;
use pagoda_text::tokenizer::TextTokenizer;
use tokio::net::TcpListener;

use crate::admission::Admission;
use crate::args::ServerArgs;
use crate::chat_prompt::ChatPolicy;
use crate::chat_template_arg::{chat_template_source, check_chat_template, with_chat_template};
use crate::generation_defaults::ParamDefaults;
use crate::http_limits::{fit_connections_to_fd_limit, HttpLimits};
use crate::kv_events::wire::Medium;
use crate::listener::{serve_http, ServeOptions};
use crate::metrics::{HistogramBuckets, Metrics, MetricsConfig};
use crate::mock_engine::start_mock;
use crate::prompt_side_setup::{check_tokenizer_fits, load_prompt_side, with_content_format};
use crate::routes::router;
use crate::state::{AppParts, AppState, SharedState};
use crate::tls::{spawn_refresh, TlsAcceptorCell};
use crate::tool_call_config::tool_call_config;

/// The engine configuration the flags describe (`--device auto` resolved; the mock engine
/// always runs on the CPU).
pub fn engine_config(args: &ServerArgs) -> anyhow::Result<EngineConfig> {
    let config = if args.mock.enabled {
        args.engine.engine_config_on(DeviceSpec::Cpu)
    } else {
        args.engine.engine_config()
    };
    Ok(config?)
}

fn check_timeouts(args: &ServerArgs) -> anyhow::Result<()> {
    if !(args.shutdown_timeout.is_finite() && args.shutdown_timeout >= 0.0) {
        bail!("--shutdown-timeout must be a number of seconds >= 0");
    }
    if !(args.sse_keep_alive.is_finite() && args.sse_keep_alive > 0.0) {
        bail!("--sse-keep-alive must be a number of seconds > 0");
    }
    if !(args.engine_stall_timeout.is_finite() && args.engine_stall_timeout >= 0.0) {
        bail!("--engine-stall-timeout must be a number of seconds >= 0 (0: off)");
    }
    Ok(())
}

/// The HTTP limits the flags set (the connection limit not yet fitted to the open-files limit).
pub fn http_limits(args: &ServerArgs) -> anyhow::Result<HttpLimits> {
    let seconds = |value: f64, flag: &str| {
        if value.is_finite() && value > 0.0 && value <= 86_400.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            bail!("{flag} must be a number of seconds in (0, 86400], got {value}")
        }
    };
    if args.max_connections == 0 {
        bail!("--max-connections must be at least 1");
    }
    Ok(HttpLimits {
        header_read_timeout: seconds(args.http_header_read_timeout, "--http-header-read-timeout")?,
        keep_alive_timeout: seconds(args.http_keep_alive_timeout, "--http-keep-alive-timeout")?,
        body_read_timeout: seconds(args.http_body_read_timeout, "--http-body-read-timeout")?,
        max_request_body_bytes: args.max_request_body_bytes,
        max_connections: args.max_connections,
    })
}

/// Loads the model (or starts the mock) and builds everything the handlers share.
pub fn build_state(args: &ServerArgs) -> anyhow::Result<AppState> {
    check_timeouts(args)?;
    // Checked before the model loads; built again where the router (or listener) is.
    args.cors.layer()?;
    args.tls.acceptor()?;
    args.generation.check()?;
    args.vllm_compat.check()?;
    let config = engine_config(args)?;
    http_limits(args)?;
    let chat_template = args
        .chat_template
        .as_deref()
        .map(chat_template_source)
        .transpose()?;
    if let Some(source) = &chat_template {
        check_chat_template(source)?;
    }
    let (engine, prompt_side, model_root) = if args.mock.enabled {
        start_mock(args, config)?
    } else {
        let path = args.engine.model_path()?;
        let prompt_side = load_prompt_side(args, &path)?;
        let started = std::time::Instant::now();
        tracing::info!(device = %config.device, load_format = config.load_format.as_str(), "starting the engine");
        let engine = start_engine(config, &path)
            .with_context(|| format!("cannot start the engine on {}", path.display()))?;
        tracing::info!(
            "loaded {} in {:.1} s",
            path.display(),
            started.elapsed().as_secs_f64()
        );
        (engine, prompt_side, path.display().to_string())
    };
    let prompt_side = match &chat_template {
        Some(source) => with_chat_template(prompt_side, source)?,
        None => prompt_side,
    };
    let prompt_side = with_content_format(prompt_side, &args.chat_template_content_format);
    if args.tokenizer.is_some() {
        check_tokenizer_fits(&prompt_side, engine.info().model.vocab_size)?;
    }
    assemble_state(args, engine, prompt_side, model_root)
}

fn assemble_state(
    args: &ServerArgs,
    engine: EngineHandle,
    prompt_side: PromptSide,
    model_root: String,
) -> anyhow::Result<AppState> {
    let served_model_names = if args.served_model_name.is_empty() {
        vec![default_served_name(Path::new(&model_root))]
    } else {
        args.served_model_name.clone()
    };
    let info = engine.info().clone();
    let defaults = HistogramBuckets::default();
    let metrics = Metrics::new(
        MetricsConfig {
            namespace: args.metrics_namespace,
            model_name: served_model_names[0].clone(),
            max_model_len: info.max_model_len,
            buckets: HistogramBuckets {
                ttft_s: args.ttft_buckets.clone().unwrap_or(defaults.ttft_s),
                itl_s: args.itl_buckets.clone().unwrap_or(defaults.itl_s),
                e2e_s: args.e2e_buckets.clone().unwrap_or(defaults.e2e_s),
            },
        },
        engine.clone(),
    )?;
    let param_defaults = ParamDefaults {
        sampling: args
            .generation
            .sampling_defaults(info.model.sampling_defaults)?,
        extra_stop_token_ids: extra_stop_token_ids(
            &prompt_side.stop_token_ids,
            &info.model.eos_token_ids,
        ),
        eos_token_ids: info.model.eos_token_ids.clone(),
        tokens_as_ids: args.vllm_compat.return_tokens_as_token_ids,
        stream_interval: args.stream_interval as usize,
        force_include_usage: args.vllm_compat.enable_force_include_usage,
    };
    let tokenizer = Arc::new(prompt_side.tokenizer);
    let mut end_token_ids = info.model.eos_token_ids.clone();
    end_token_ids.extend(&param_defaults.extra_stop_token_ids);
    let grammar_compiler = grammar_compiler(
        args,
        Arc::clone(&tokenizer),
        info.model.vocab_size,
        &end_token_ids,
        &metrics,
    )?;
    let mut state = AppState::new(AppParts {
        engine,
        tokenizer,
        template: prompt_side.template,
        served_model_names,
        model_root,
        defaults: param_defaults,
        metrics,
        admission: Admission::new(args.max_waiting_requests),
    });
    state.api_key = args.api_key.clone().filter(|k| !k.is_empty());
    state.log_requests = !args.disable_log_requests;
    state.sse_keep_alive = std::time::Duration::from_secs_f64(args.sse_keep_alive);
    state.response_role = args.vllm_compat.response_role.trim().to_string();
    state.http_limits = http_limits(args)?;
    state.chat_policy = ChatPolicy {
        extra_roles: args.allowed_roles.clone(),
        allow_special_tokens_in_content: args.allow_special_tokens_in_content,
    };
    state.grammar_compiler = grammar_compiler;
    state.tool_calls = tool_call_config(args)?;
    state.reasoning = reasoning_format(args)?;
    state.lora = crate::lora_setup::lora_registry(args, &state)?;
    state.runtime_lora_updating = state.lora.is_some() && args.runtime_lora_updating();
    state.openapi_behind_api_key = args.openapi_behind_api_key;
    let document = crate::openapi::document(state.api_key.is_some(), state.runtime_lora_updating);
    state.openapi_json = document.to_json().context("the OpenAPI document")?.into();
    if let Some(path) = &args.request_timeline {
        let writer = crate::timeline::TimelineWriter::create(path).map_err(|e| {
            anyhow::anyhow!("cannot create --request-timeline {}: {e}", path.display())
        })?;
        state.timeline = Some(writer);
    }
    Ok(state)
}

/// `--reasoning-parser`, checked.
pub fn reasoning_format(args: &ServerArgs) -> anyhow::Result<Option<ReasoningFormat>> {
    args.reasoning_parser
        .as_deref()
        .map(|name| {
            name.parse::<ReasoningFormat>().map_err(|_| {
                anyhow::anyhow!(
                    "unknown --reasoning-parser {name:?}: expected one of {}",
                    ReasoningFormat::CLI_NAMES.join(", ")
                )
            })
        })
        .transpose()
}

/// The structured-output compiler for the model's vocabulary. A tokenizer llguidance cannot read
/// leaves the server up without structured outputs (their requests get a 400), and says so.
fn grammar_compiler(
    args: &ServerArgs,
    tokenizer: Arc<TextTokenizer>,
    vocab_size: usize,
    end_token_ids: &[u32],
    metrics: &Metrics,
) -> anyhow::Result<Option<Arc<GrammarCompiler>>> {
    let timeout_s = args.structured_output_timeout;
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= 3600.0) {
        bail!(
            "--structured-output-timeout must be a number of seconds in (0, 3600], got {timeout_s}"
        );
    }
    let limits = CompileLimits {
        timeout: Duration::from_secs_f64(timeout_s),
        max_grammar_bytes: args.max_grammar_bytes,
        ..CompileLimits::default()
    };
    match GrammarCompiler::new(tokenizer, vocab_size, end_token_ids, limits) {
        Ok(compiler) => Ok(Some(Arc::new(
            compiler.with_mask_observer(metrics.grammar_mask_observer()),
        ))),
        Err(error) => {
            tracing::warn!(%error, "structured outputs are disabled");
            Ok(None)
        }
    }
}

/// `models/SmolLM2-135M-Instruct.Q4_1.gguf` → `SmolLM2-135M-Instruct.Q4_1`; a directory → its name.
pub fn default_served_name(model_path: &Path) -> String {
    let name = if model_path.is_dir() {
        model_path.file_name()
    } else {
        model_path.file_stem()
    };
    name.map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "pagoda".into())
}

/// Binds, serves until SIGTERM/SIGINT, drains, and returns once every connection is closed.
pub async fn serve(args: &ServerArgs, state: AppState) -> anyhow::Result<()> {
    let address = format!("{}:{}", args.host, args.port);
    let listener = TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let local: SocketAddr = listener.local_addr()?;
    let mut limits = state.http_limits;
    limits.max_connections = fit_connections_to_fd_limit(limits.max_connections);
    start_kv_events(args, &state).await?;
    let state: SharedState = Arc::new(state);
    if args.engine_stall_timeout > 0.0 {
        let timeout = Duration::from_secs_f64(args.engine_stall_timeout);
        tokio::spawn(crate::watchdog::run(state.clone(), timeout));
    }
    let scheme = if args.tls.ssl_certfile.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!(address = %local, model = state.model_name(), max_connections = limits.max_connections, "pagoda-server listening on {scheme}://{local}");
    let app = match args.cors.layer()? {
        // Outside every other layer: preflights are answered before authentication.
        Some(cors) => router(state.clone()).layer(cors),
        None => router(state.clone()),
    };
    let deadline = Duration::from_secs_f64(args.shutdown_timeout);
    let options = ServeOptions {
        limits,
        root_path: args.vllm_compat.root_path()?.map(Arc::from),
        tls: args.tls.acceptor()?.map(TlsAcceptorCell::new),
    };
    if let (true, Some(cell)) = (args.tls.enable_ssl_refresh, &options.tls) {
        spawn_refresh(args.tls.clone(), cell.clone());
    }
    serve_http(
        listener,
        app,
        options,
        drain_on_signal(state.clone(), deadline),
    )
    .await;
    let engine = state.engine.clone();
    tokio::task::spawn_blocking(move || engine.shutdown()).await?;
    tracing::info!("pagoda-server stopped");
    Ok(())
}

/// Publishes KV-cache events when `--kv-events-config` asks for them, before any request.
async fn start_kv_events(args: &ServerArgs, state: &AppState) -> anyhow::Result<()> {
    let Some(config) = args.kv_events_config.as_ref().filter(|c| c.publishes()) else {
        return Ok(());
    };
    let info = state.engine.info();
    if !info.enable_prefix_caching {
        tracing::warn!("KV-cache events are on but prefix caching is off: no block will be stored");
    }
    let medium = match info.device {
        DeviceSpec::Cuda(_) => Medium::Gpu,
        DeviceSpec::Cpu => Medium::Cpu,
    };
    crate::kv_events::publisher::start(config, &state.engine, medium).await?;
    Ok(())
}

/// Resolves on the first SIGTERM/SIGINT: from then on new requests get 503 and `/health` fails;
/// in-flight requests have `deadline` to finish before the engine aborts them.
async fn drain_on_signal(state: SharedState, deadline: Duration) {
    shutdown_signal().await;
    state.start_draining();
    tracing::info!(
        deadline_s = deadline.as_secs_f64(),
        "shutdown requested: draining in-flight requests"
    );
    tokio::spawn(async move {
        tokio::time::sleep(deadline).await;
        tracing::warn!("shutdown deadline reached: aborting the requests still running");
        let engine = state.engine.clone();
        let _ = tokio::task::spawn_blocking(move || engine.shutdown()).await;
    });
}

async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}
