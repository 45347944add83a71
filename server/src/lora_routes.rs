//! The LoRA routes: `/v1/models` entries for the adapters, and vLLM's runtime
//! `POST /v1/load_lora_adapter` and `/v1/unload_lora_adapter` (only with
//! `--allow-runtime-lora-updating`; behind the API key like every API route).

use std::path::PathBuf;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::lora::{LoraModuleSpec, LoraRegistry, LoraRegistryError};
use crate::openai::error::{ApiError, ErrorResponses};
use crate::openai::request::json_body::JsonBody;
use crate::openai::request::parse::parse_body;
use crate::openai::wire::models::ModelCard;
use crate::state::SharedState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadAdapterRequest {
    lora_name: String,
    #[schema(value_type = String)]
    lora_path: PathBuf,
    /// vLLM's: replace an adapter of that name instead of refusing the name.
    #[serde(default)]
    load_inplace: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnloadAdapterRequest {
    lora_name: String,
    /// vLLM's numeric id, accepted and ignored (adapters are named).
    #[serde(default)]
    #[allow(dead_code)]
    lora_int_id: Option<u64>,
}

fn registry(state: &SharedState) -> Result<&LoraRegistry, ApiError> {
    state
        .lora
        .as_deref()
        .ok_or_else(|| ApiError::not_found("LoRA is not enabled (--enable-lora)"))
}

impl From<LoraRegistryError> for ApiError {
    fn from(error: LoraRegistryError) -> Self {
        match &error {
            LoraRegistryError::NotFound(_) => ApiError {
                param: Some("lora_name".into()),
                ..ApiError::not_found(error.to_string())
            },
            LoraRegistryError::AlreadyLoaded(_)
            | LoraRegistryError::BaseModelName(_)
            | LoraRegistryError::InvalidName(_) => {
                ApiError::invalid("lora_name", error.to_string())
            }
            LoraRegistryError::Invalid(_) => ApiError::invalid("lora_path", error.to_string()),
            LoraRegistryError::PathNotFound { .. } => ApiError {
                param: Some("lora_path".into()),
                ..ApiError::not_found(error.to_string())
            },
        }
    }
}

#[utoipa::path(
    post,
    path = "/v1/load_lora_adapter",
    tag = "vLLM",
    summary = "Load a LoRA adapter (--allow-runtime-lora-updating)",
    request_body = LoadAdapterRequest,
    responses(
        (status = 200, description = "A confirmation line", body = String),
        ErrorResponses,
    )
)]
pub async fn load_lora_adapter(
    State(state): State<SharedState>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request: LoadAdapterRequest = parse_body(&body)?;
    let registry = registry(&state)?;
    let spec = LoraModuleSpec {
        name: request.lora_name.clone(),
        path: request.lora_path.clone(),
        base_model_name: None,
    };
    match request.load_inplace.unwrap_or(false) {
        true => registry.replace(spec).await?,
        false => registry.add(spec).await?,
    };
    state.metrics.register_model(&request.lora_name);
    tracing::info!(
        adapter = request.lora_name,
        path = %request.lora_path.display(),
        "LoRA adapter loaded at runtime"
    );
    let message = format!(
        "Success: LoRA adapter '{}' added successfully.",
        request.lora_name
    );
    Ok((StatusCode::OK, message).into_response())
}

#[utoipa::path(
    post,
    path = "/v1/unload_lora_adapter",
    tag = "vLLM",
    summary = "Unload a LoRA adapter (--allow-runtime-lora-updating)",
    request_body = UnloadAdapterRequest,
    responses(
        (status = 200, description = "A confirmation line", body = String),
        ErrorResponses,
    )
)]
pub async fn unload_lora_adapter(
    State(state): State<SharedState>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request: UnloadAdapterRequest = parse_body(&body)?;
    registry(&state)?.remove(&request.lora_name)?;
    tracing::info!(
        adapter = request.lora_name,
        "LoRA adapter unloaded at runtime"
    );
    let message = format!(
        "Success: LoRA adapter '{}' removed successfully.",
        request.lora_name
    );
    Ok((StatusCode::OK, message).into_response())
}

/// The `/v1/models` entries of the adapters: `parent` is the model each adapts, `root` its
/// directory.
pub fn adapter_model_entries(state: &SharedState, max_model_len: usize) -> Vec<ModelCard> {
    let Some(registry) = &state.lora else {
        return Vec::new();
    };
    registry
        .list()
        .into_iter()
        .map(|adapter| ModelCard {
            id: adapter.name,
            object: "model",
            created: state.started_unix_s,
            owned_by: "pagoda",
            root: adapter.path.display().to_string(),
            parent: Some(adapter.parent),
            max_model_len,
        })
        .collect()
}
