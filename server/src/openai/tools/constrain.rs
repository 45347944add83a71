//! A request's structured-output spec → the compiled constraint its choices follow, through the
//! server's grammar compiler (off the async threads, within `--structured-output-timeout`);
//! compile errors become 400s naming the field that asked.

use pagoda_structured::{GrammarCompiler, StructuredError};

use crate::metrics::Metrics;
use crate::openai::error::ApiError;
use crate::openai::request::plan::SharedConstraint;
use crate::openai::tools::output_spec::RequestedSpec;

/// The label requests forced to call a tool carry in the metrics.
pub const TOOL_CALL_KIND: &str = "tool_call";

/// Compiles `requested` (or takes it from the cache) and records the compile time; the caller
/// counts the request ([`Metrics::record_structured_request`]) if it constrains one.
pub async fn compile_requested(
    compiler: Option<&GrammarCompiler>,
    metrics: &Metrics,
    requested: &RequestedSpec,
) -> Result<SharedConstraint, ApiError> {
    let compiler = compiler.ok_or_else(|| {
        ApiError::invalid(
            requested.field.clone(),
            "structured outputs are unavailable: the model's tokenizer could not be prepared \
             for grammars (see the server log)",
        )
    })?;
    let compiled = compiler
        .compile(&requested.spec)
        .await
        .map_err(|error| api_error(error, &requested.field))?;
    if let Some(duration) = compiled.compile_time {
        metrics.record_grammar_compile(duration);
    }
    Ok(SharedConstraint(compiled.constraint))
}

fn api_error(error: StructuredError, field: &str) -> ApiError {
    match error {
        StructuredError::Internal(message) => {
            ApiError::internal(format!("compiling `{field}` failed: {message}"))
        }
        StructuredError::Invalid(message) => {
            tracing::debug!(field, %message, "structured-output spec refused");
            ApiError::invalid(field, format!("invalid `{field}`: {message}"))
        }
        other => {
            tracing::warn!(field, error = %other, "structured-output spec refused");
            ApiError::invalid(field, format!("`{field}`: {other}"))
        }
    }
}
