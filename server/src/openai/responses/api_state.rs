//! What the Responses API keeps between requests: stored responses (`previous_response_id`,
//! `GET`/`DELETE /v1/responses/{id}`) and background runs with their event logs. It travels
//! with the API's routes (an axum `Extension`), not in the server's shared state.

use std::sync::Arc;

use crate::openai::responses::background::BackgroundRuns;
use crate::openai::responses::store::ResponseStore;

/// The Responses API's own state; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ResponsesState {
    pub stored: Arc<ResponseStore>,
    pub background: Arc<BackgroundRuns>,
}
