//! vLLM's `/tokenize` and `/detokenize` answers.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TokenizeResponse {
    pub count: usize,
    pub max_model_len: usize,
    pub tokens: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DetokenizeResponse {
    pub prompt: String,
}
