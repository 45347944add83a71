//! What every choice of one request shares: the engine, the text side, the metrics and the
//! request's plan (how its output is cut, named and streamed).

use std::sync::Arc;

use pagoda_engine::EngineHandle;
use pagoda_text::tokenizer::TextTokenizer;

use crate::metrics::Metrics;
use crate::openai::plan::RequestPlan;

/// Everything one choice needs besides its engine stream.
#[derive(Debug, Clone)]
pub struct ChoiceContext {
    pub engine: EngineHandle,
    pub tokenizer: Arc<TextTokenizer>,
    pub metrics: Metrics,
    pub plan: Arc<RequestPlan>,
}
