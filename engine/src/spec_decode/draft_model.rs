//! Loading and checking speculative decoding's draft model (`--speculative-config` method
//! `draft_model`): on the target's device, in its compute dtype, with a vocabulary the target's
//! covers and a context as long as `max_model_len`.

use super::SpeculativeConfig;
use crate::error::{EngineError, Result};
use crate::models::load::LoadOptions;
use crate::models::{load_model_with, CausalLm, ModelConfig};

/// The draft model `speculative` names, loaded with the target's `options` (device, dtype):
/// `None` without one.
pub fn load_draft_model(
    speculative: Option<&SpeculativeConfig>,
    options: &LoadOptions,
) -> Result<Option<Box<dyn CausalLm>>> {
    let Some(draft) = speculative.and_then(|s| s.method.draft_model()) else {
        return Ok(None);
    };
    let model = load_model_with(&draft.model, options).map_err(|e| {
        EngineError::Config(format!(
            "--speculative-config: the draft model {} does not load: {e}",
            draft.model.display()
        ))
    })?;
    tracing::info!(
        draft_model = %draft.model.display(),
        num_layers = model.config().num_layers,
        hidden_size = model.config().hidden_size,
        "speculative decoding: draft model loaded"
    );
    Ok(Some(model))
}

/// Whether `draft` can propose for `target` with sequences of up to `max_model_len` tokens.
pub fn check_draft_model(
    target: &ModelConfig,
    draft: &ModelConfig,
    max_model_len: usize,
) -> Result<()> {
    let fail = |m: String| Err(EngineError::Config(format!("--speculative-config: {m}")));
    if draft.vocab_size > target.vocab_size {
        return fail(format!(
            "the draft model's vocabulary ({} tokens) is larger than the target's ({}): \
             the two must share a tokenizer",
            draft.vocab_size, target.vocab_size
        ));
    }
    if draft.context_length < max_model_len {
        return fail(format!(
            "the draft model's context length ({}) is shorter than max_model_len ({max_model_len}); \
             lower --max-model-len to at most {}",
            draft.context_length, draft.context_length
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_that_cannot_propose_for_the_target_is_refused() {
        let target = ModelConfig::mock(1000, vec![0], 2048);
        let fits = ModelConfig::mock(1000, vec![0], 2048);
        assert!(check_draft_model(&target, &fits, 2048).is_ok());
        let larger_vocab = ModelConfig::mock(1001, vec![0], 2048);
        let error = check_draft_model(&target, &larger_vocab, 2048).expect_err("refused");
        assert!(
            error.to_string().contains("vocabulary (1001 tokens)"),
            "{error}"
        );
        let short = ModelConfig::mock(1000, vec![0], 1024);
        let error = check_draft_model(&target, &short, 2048).expect_err("refused");
        assert!(error.to_string().contains("at most 1024"), "{error}");
        assert!(check_draft_model(&target, &short, 1024).is_ok());
    }
}
