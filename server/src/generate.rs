//! Prompt → text with one engine, blocking: the layer under `pagoda-generate` and the tests.
//!
//! [`TextGenerator::load`] builds everything a model implies — the engine, the tokenizer and the
//! chat template, all from the same GGUF file or Hugging Face directory — and
//! [`TextGenerator::generate`] runs one request, streaming its text through a callback.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pagoda_engine::{
    start_engine, EngineConfig, EngineError, EngineHandle, EngineRequest, FinishReason,
    RequestTimings, SamplingParams, StopConditions, TokenEvent, Usage,
};

use pagoda_text::detokenizer::IncrementalDetokenizer;
use pagoda_text::prompt_side::{extra_stop_token_ids, PromptSide, PromptSideError};
use pagoda_text::template::{ChatMessage, ChatTemplate, TemplateError};
use pagoda_text::tokenizer::{TextTokenizer, TokenizerError};

/// Everything that can go wrong between a prompt and its text.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The model's tokenizer or chat template could not be read (or there is no model there).
    #[error(transparent)]
    PromptSide(#[from] PromptSideError),
    /// The tokenizer could not be built, or failed to encode or decode.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// The chat template does not compile or rejected the messages.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The engine refused the request, failed while running it, or has stopped.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

pub type Result<T, E = GenerateError> = std::result::Result<T, E>;

/// One finished generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated text, special tokens left out.
    pub text: String,
    /// Every generated token id, a final EOS or stop token included.
    pub token_ids: Vec<u32>,
    pub finish_reason: FinishReason,
    pub usage: Usage,
    /// From submission to the first generated token; `None` when none was generated.
    pub ttft: Option<Duration>,
    /// From submission to the end of the request.
    pub total: Duration,
}

impl Generation {
    /// Generated tokens per second of the whole request (prefill included).
    pub fn tokens_per_s(&self) -> f64 {
        let seconds = self.total.as_secs_f64();
        if seconds > 0.0 {
            self.usage.completion_tokens as f64 / seconds
        } else {
            0.0
        }
    }
}

/// A started engine with the tokenizer and chat template of its model.
#[derive(Debug)]
pub struct TextGenerator {
    handle: EngineHandle,
    tokenizer: Arc<TextTokenizer>,
    template: ChatTemplate,
    /// The tokenizer's end-of-turn ids that the engine's model config does not already stop on.
    extra_stop_token_ids: Vec<u32>,
}

impl TextGenerator {
    /// Loads a model — a GGUF file or a Hugging Face directory — and starts an engine on it. The
    /// tokenizer and chat template come from the same file or directory; without a chat template
    /// a model gets ChatML.
    pub fn load(model_path: impl AsRef<Path>, config: EngineConfig) -> Result<Self> {
        let model_path = model_path.as_ref();
        let prompt_side = PromptSide::load(model_path)?;
        let handle = start_engine(config, model_path)?;
        let extra_stop_token_ids = extra_stop_token_ids(
            &prompt_side.stop_token_ids,
            &handle.info().model.eos_token_ids,
        );
        Ok(Self {
            handle,
            tokenizer: Arc::new(prompt_side.tokenizer),
            template: prompt_side.template,
            extra_stop_token_ids,
        })
    }

    pub fn handle(&self) -> &EngineHandle {
        &self.handle
    }

    pub fn tokenizer(&self) -> &Arc<TextTokenizer> {
        &self.tokenizer
    }

    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Prompt ids for a conversation: the chat template with the assistant's turn opened.
    pub fn chat_prompt_ids(&self, messages: &[ChatMessage]) -> Result<Vec<u32>> {
        let text = self.template.render(messages, true)?;
        // The template writes any BOS itself, as transformers' `apply_chat_template` assumes.
        Ok(self.tokenizer.encode(&text, false)?)
    }

    /// Prompt ids for text used as-is (no chat template), BOS added when the model wants one.
    pub fn raw_prompt_ids(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.tokenizer.encode(text, true)?)
    }

    /// Runs one request to its end, calling `on_text` with each piece of text as it is generated.
    /// Unless `stop.ignore_eos`, the tokenizer's end-of-turn ids end generation too.
    /// Engine errors (at submission or while running) are returned, never panicked on.
    pub fn generate(
        &self,
        prompt_ids: Vec<u32>,
        sampling: SamplingParams,
        stop: StopConditions,
        mut on_text: impl FnMut(&str),
    ) -> Result<Generation> {
        let stop = self.with_end_of_turn_ids(stop);
        let request = EngineRequest::new(self.handle.next_request_id(), prompt_ids, sampling, stop);
        let submitted = request.arrival;
        let mut stream = self.handle.submit(self.handle.validate(request)?)?;
        let mut detokenizer = IncrementalDetokenizer::new(Arc::clone(&self.tokenizer), true);
        loop {
            match stream.blocking_next() {
                Some(TokenEvent::Token(token)) => {
                    let delta = detokenizer.push(token.token_id)?;
                    if !delta.is_empty() {
                        on_text(&delta);
                    }
                }
                Some(TokenEvent::Finished {
                    reason,
                    usage,
                    timings,
                }) => {
                    let tail = detokenizer.finish()?;
                    if !tail.is_empty() {
                        on_text(&tail);
                    }
                    return Ok(finished(detokenizer, reason, usage, timings, submitted));
                }
                Some(TokenEvent::Error(error)) => return Err(error.into()),
                // Never asked for here.
                Some(TokenEvent::PromptLogprobs(_)) => {}
                None => return Err(EngineError::ShutDown.into()),
            }
        }
    }

    /// Stops the engine and waits for its thread (also done on drop).
    pub fn shutdown(&self) {
        self.handle.shutdown();
    }

    fn with_end_of_turn_ids(&self, mut stop: StopConditions) -> StopConditions {
        if !stop.ignore_eos {
            for &id in &self.extra_stop_token_ids {
                if !stop.stop_token_ids.contains(&id) {
                    stop.stop_token_ids.push(id);
                }
            }
        }
        stop
    }
}

impl Drop for TextGenerator {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

fn finished(
    detokenizer: IncrementalDetokenizer,
    reason: FinishReason,
    usage: Usage,
    timings: RequestTimings,
    submitted: Instant,
) -> Generation {
    Generation {
        text: detokenizer.text().to_string(),
        token_ids: detokenizer.token_ids().to_vec(),
        finish_reason: reason,
        usage,
        ttft: timings
            .first_token
            .map(|at| at.saturating_duration_since(submitted)),
        total: timings.finished.saturating_duration_since(submitted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_per_s_counts_completion_tokens_over_the_whole_request() {
        let generation = Generation {
            text: String::new(),
            token_ids: vec![1; 10],
            finish_reason: FinishReason::Length,
            usage: Usage {
                prompt_tokens: 5,
                completion_tokens: 10,
                num_cached_tokens: 0,
                spec_decode: None,
            },
            ttft: Some(Duration::from_millis(100)),
            total: Duration::from_millis(500),
        };
        assert!((generation.tokens_per_s() - 20.0).abs() < 1e-9);
        let instant = Generation {
            total: Duration::ZERO,
            ..generation
        };
        assert_eq!(instant.tokens_per_s(), 0.0);
    }

    #[test]
    fn missing_model_is_reported_by_path() {
        let error = TextGenerator::load("/nonexistent/model.gguf", EngineConfig::default())
            .expect_err("no such file");
        assert!(matches!(
            error,
            GenerateError::PromptSide(PromptSideError::ModelNotFound(_))
        ));
        assert_eq!(
            error.to_string(),
            "model file /nonexistent/model.gguf not found"
        );
    }

    #[test]
    fn a_directory_is_read_as_a_hugging_face_model() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = TextGenerator::load(dir.path(), EngineConfig::default())
            .expect_err("no tokenizer.json");
        assert!(
            matches!(&error, GenerateError::PromptSide(PromptSideError::Tokenizer(TokenizerError::File { path, .. }))
                if path.ends_with("tokenizer.json")),
            "{error}"
        );
    }
}
