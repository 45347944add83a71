//! The router: every route, its layers, and the small handlers (models, health, version,
//! metrics, admin).

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Extension, Json, Router};
use tower_http::catch_panic::CatchPanicLayer;

use crate::lora_routes;
use crate::middleware::{http_metrics, request_id, require_api_key};
use crate::openai::error::ApiError;
use crate::openai::error::ErrorResponses;
use crate::openai::request::path_param::PathParam;
use crate::openai::responses::api_state::ResponsesState;
use crate::openai::wire::models::{
    ModelCard, ModelList, ResetPrefixCacheResponse, VersionResponse,
};
use crate::openai::{chat, completions, responses, sagemaker, tokenize};
use crate::state::SharedState;

/// The routes that need no API key, for probes and scrapers (also the only ones a connection
/// past `--max-connections` may use); `/ping` is SageMaker's health check.
pub const OPEN_PATHS: [&str; 4] = ["/health", "/metrics", "/version", "/ping"];

/// The OpenAPI document's route.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// `GET /openapi.json`: the document written at start for this server's settings.
fn openapi_route(state: &SharedState) -> axum::routing::MethodRouter<SharedState> {
    let body = state.openapi_json.clone();
    get(move || {
        // A clone of the written document shares its bytes: nothing is copied per request.
        let body = body.clone();
        async move { ([(header::CONTENT_TYPE, "application/json")], body) }
    })
}

/// The whole API. `state.http_limits` bounds every body (413 past it).
pub fn router(state: SharedState) -> Router {
    let max_request_body_bytes = state.http_limits.max_request_body_bytes;
    let protected = Router::new()
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/completions", post(completions::completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{*model}", get(model))
        .route("/tokenize", post(tokenize::tokenize))
        .route("/detokenize", post(tokenize::detokenize))
        .route("/reset_prefix_cache", post(reset_prefix_cache))
        .merge(responses_routes());
    let protected = if state.runtime_lora_updating {
        protected
            .route(
                "/v1/load_lora_adapter",
                post(lora_routes::load_lora_adapter),
            )
            .route(
                "/v1/unload_lora_adapter",
                post(lora_routes::unload_lora_adapter),
            )
    } else {
        protected
    };
    let openapi = openapi_route(&state);
    let protected = match state.openapi_behind_api_key {
        true => protected.route(OPENAPI_PATH, openapi.clone()),
        false => protected,
    };
    let protected = protected.route_layer(middleware::from_fn_with_state(
        state.clone(),
        require_api_key,
    ));
    let open = Router::new()
        .route(OPEN_PATHS[0], get(health))
        .route(OPEN_PATHS[1], get(metrics))
        .route(OPEN_PATHS[2], get(version))
        .route(OPEN_PATHS[3], get(health).post(health));
    let open = match state.openapi_behind_api_key {
        true => open,
        false => open.route(OPENAPI_PATH, openapi),
    };
    protected
        .merge(open)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_request_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), http_metrics))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(middleware::from_fn(request_id))
        .with_state(state)
}

/// The Responses API's routes (and SageMaker's, which may run one), with the stored responses
/// and background runs they share travelling as their `Extension`.
fn responses_routes() -> Router<SharedState> {
    Router::new()
        .route("/v1/responses", post(responses::create_response))
        .route(
            "/v1/responses/input_tokens",
            post(responses::count_input_tokens),
        )
        .route(
            "/v1/responses/{id}",
            get(responses::retrieve_response).delete(responses::delete_response),
        )
        .route(
            "/v1/responses/{id}/cancel",
            post(responses::cancel_response),
        )
        .route(
            "/v1/responses/{id}/input_items",
            get(responses::list_input_items),
        )
        .route("/invocations", post(sagemaker::invocations))
        .layer(Extension(ResponsesState::default()))
}

#[utoipa::path(
    get,
    path = "/v1/models",
    tag = "OpenAI",
    summary = "The served model names, then the LoRA adapters",
    responses(
        (status = 200, description = "The models", body = ModelList),
        ErrorResponses,
    )
)]
async fn models(State(state): State<SharedState>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: model_entries(&state),
    })
}

/// `GET /v1/models/{model}` (the SDKs' `models.retrieve`): one entry of the list, or 404
/// `model_not_found`. Names may hold `/` (`org/model`).
#[utoipa::path(
    get,
    path = "/v1/models/{model}",
    tag = "OpenAI",
    summary = "One model of the list",
    params(("model" = String, Path, description = "A served name or adapter name (may hold `/`)")),
    responses(
        (status = 200, description = "The model", body = ModelCard),
        ErrorResponses,
    )
)]
async fn model(
    State(state): State<SharedState>,
    PathParam(name): PathParam,
) -> Result<Json<ModelCard>, ApiError> {
    model_entries(&state)
        .into_iter()
        .find(|entry| entry.id == name)
        .map(Json)
        .ok_or_else(|| crate::openai::request::model_select::model_not_found(&name))
}

/// The served names, then the loaded LoRA adapters, as OpenAI model objects.
fn model_entries(state: &SharedState) -> Vec<ModelCard> {
    let info = state.engine.info();
    let mut data: Vec<_> = state
        .served_model_names
        .iter()
        .map(|name| ModelCard {
            id: name.clone(),
            object: "model",
            created: state.started_unix_s,
            owned_by: "pagoda",
            root: state.model_root.clone(),
            parent: None,
            max_model_len: info.max_model_len,
        })
        .collect();
    data.extend(lora_routes::adapter_model_entries(
        state,
        info.max_model_len,
    ));
    data
}

/// 200 while the server takes requests; 503 once it is draining for shutdown, or while the
/// engine is stalled (`--engine-stall-timeout`), with the reason.
#[utoipa::path(
    get,
    path = "/health",
    tag = "Server",
    summary = "200 while serving; 503 while draining or stalled",
    responses(
        (status = 200, description = "Serving"),
        ErrorResponses,
    )
)]
async fn health(State(state): State<SharedState>) -> Response {
    if state.is_draining() {
        return ApiError::shutting_down().into_response();
    }
    if let Some(reason) = state.engine_health.stall_reason() {
        return ApiError {
            code: Some("engine_stalled"),
            ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, reason)
        }
        .into_response();
    }
    StatusCode::OK.into_response()
}

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "Server",
    summary = "Prometheus text format",
    responses(
        (status = 200, description = "Prometheus exposition", body = String, content_type = "text/plain; version=0.0.4"),
        ErrorResponses,
    )
)]
async fn metrics(State(state): State<SharedState>) -> Response {
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        state.metrics.render(),
    )
        .into_response()
}

#[utoipa::path(
    get,
    path = "/version",
    tag = "Server",
    summary = "The server version",
    responses(
        (status = 200, description = "`{version}`", body = VersionResponse),
        ErrorResponses,
    )
)]
async fn version() -> Json<VersionResponse> {
    Json(VersionResponse {
        version: env!("CARGO_PKG_VERSION"),
    })
}

#[utoipa::path(
    post,
    path = "/reset_prefix_cache",
    tag = "vLLM",
    summary = "Drop every cached prefix",
    responses(
        (status = 200, description = "How many blocks left the cache", body = ResetPrefixCacheResponse),
        ErrorResponses,
    )
)]
async fn reset_prefix_cache(
    State(state): State<SharedState>,
) -> Result<Json<ResetPrefixCacheResponse>, ApiError> {
    let num_blocks_dropped = state.engine.reset_prefix_cache().await?;
    tracing::info!(num_blocks_dropped, "prefix cache reset by an admin request");
    Ok(Json(ResetPrefixCacheResponse { num_blocks_dropped }))
}

async fn not_found(request: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route for {} {}",
        request.method(),
        request.uri().path()
    ))
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} is not allowed on {}",
            request.method(),
            request.uri().path()
        ),
    )
}

/// A handler that panicked answers 500 in OpenAI's shape; the server goes on.
fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into());
    tracing::error!(%message, "a request handler panicked");
    ApiError::internal(format!("internal error: {message}")).into_response()
}
