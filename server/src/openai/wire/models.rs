//! `/v1/models`: the served names, then the LoRA adapters, as OpenAI model objects (with
//! vLLM's `root`, `parent` and `max_model_len`).

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    #[schema(value_type = String)]
    pub object: &'static str,
    pub data: Vec<ModelCard>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ModelCard {
    pub id: String,
    /// Always `model`.
    #[schema(value_type = String)]
    pub object: &'static str,
    /// Unix seconds: when the server started.
    pub created: u64,
    #[schema(value_type = String)]
    pub owned_by: &'static str,
    /// The model's (or adapter's) directory or file.
    pub root: String,
    /// For an adapter, the model it adapts; `null` for a served name.
    pub parent: Option<String>,
    pub max_model_len: usize,
}

/// `GET /version`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct VersionResponse {
    #[schema(value_type = String)]
    pub version: &'static str,
}

/// `POST /reset_prefix_cache`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ResetPrefixCacheResponse {
    pub num_blocks_dropped: usize,
}
