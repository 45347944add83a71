//! A request's `model`: absent or a served name is the base model, an adapter's name selects
//! the adapter (loaded again first if it was evicted), anything else is OpenAI's 404
//! `model_not_found`.

use crate::openai::error::ApiError;
use crate::openai::request::plan::SelectedModel;
use crate::state::AppState;

/// Checks a `model` that needs no adapter loaded (tokenizing): absent, a served name or an
/// adapter's name.
pub fn check_model(state: &AppState, requested: Option<&str>) -> Result<(), ApiError> {
    match requested {
        None => Ok(()),
        Some(name) if state.served_model_names.iter().any(|n| n == name) => Ok(()),
        Some(name) if state.lora.as_ref().is_some_and(|r| r.contains(name)) => Ok(()),
        Some(name) => Err(model_not_found(name)),
    }
}

/// The model a generation request runs with, and the name its responses carry.
pub async fn select_model(
    state: &AppState,
    requested: Option<&str>,
) -> Result<SelectedModel, ApiError> {
    let base = || SelectedModel {
        lora: None,
        name: state.model_name().to_string(),
    };
    let Some(name) = requested else {
        return Ok(base());
    };
    if state.served_model_names.iter().any(|n| n == name) {
        return Ok(base());
    }
    if let Some(registry) = &state.lora {
        match registry.get(name).await {
            Ok(Some(adapter)) => {
                return Ok(SelectedModel {
                    name: adapter.name().to_string(),
                    lora: Some(adapter),
                })
            }
            Ok(None) => {}
            Err(error) => return Err(ApiError::invalid("model", error.to_string())),
        }
    }
    Err(model_not_found(name))
}

/// 404 for a `model` that is neither served nor an adapter (OpenAI's `model_not_found`).
pub fn model_not_found(name: &str) -> ApiError {
    ApiError {
        param: Some("model".into()),
        code: Some("model_not_found"),
        ..ApiError::not_found(format!("The model `{name}` does not exist."))
    }
}
