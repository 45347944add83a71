//! The prompt's part of a choice: vLLM's `prompt_logprobs` (each prompt token's log-probability
//! beside the choice) and completions' `echo` (the prompt before the choice's text, with its
//! tokens' log-probabilities when `logprobs` is asked for: what lm-eval's loglikelihood reads).

use std::sync::Arc;

use pagoda_engine::PromptTokenLogprob;
use pagoda_text::tokenizer::TextTokenizer;

use crate::openai::choices::logprob::{token_text, TokenLogprob, TokenNaming};
use crate::openai::wire::prompt_logprobs::{PromptLogprobs, PromptPosition, PromptTokenEntry};

/// What vLLM writes for a log-probability of `-inf` (JSON has no infinity).
const MIN_LOGPROB: f32 = -9999.0;

/// The prompt `echo` writes: its text and its tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct EchoPrompt {
    pub text: String,
    pub token_ids: Vec<u32>,
}

/// One choice's prompt side, from its settings and the engine's `PromptLogprobs` event.
#[derive(Debug, Clone, Default)]
pub struct PromptSide {
    /// Alternatives of vLLM's `prompt_logprobs` (`None`: not asked for).
    pub num_prompt_logprobs: Option<usize>,
    /// The prompt to echo, until it is written.
    pub echo: Option<Arc<EchoPrompt>>,
    /// Alternatives of the echoed tokens' log-probabilities (`None`: no `logprobs`).
    pub num_echo_logprobs: Option<usize>,
    /// How the echoed tokens' log-probabilities name tokens.
    pub naming: TokenNaming,
    /// The prompt's token ids, for vLLM's `return_token_ids` (`None`: not asked for).
    pub token_ids: Option<Arc<[u32]>>,
    entries: Option<Vec<PromptTokenLogprob>>,
}

impl PromptSide {
    pub fn new(
        num_prompt_logprobs: Option<usize>,
        echo: Option<Arc<EchoPrompt>>,
        num_echo_logprobs: Option<usize>,
    ) -> Self {
        Self {
            num_prompt_logprobs,
            echo,
            num_echo_logprobs,
            naming: TokenNaming::Text,
            token_ids: None,
            entries: None,
        }
    }

    /// The prompt's token ids, once, for the choice's first delta (`None` after, or when not
    /// asked for).
    pub fn take_token_ids(&mut self) -> Option<Arc<[u32]>> {
        self.token_ids.take()
    }

    /// Keeps the engine's entries for the echo; returns vLLM's `prompt_logprobs` when asked for.
    pub fn on_entries(
        &mut self,
        entries: Vec<PromptTokenLogprob>,
        tokenizer: &TextTokenizer,
    ) -> Option<PromptLogprobs> {
        let json = self
            .num_prompt_logprobs
            .map(|num_top| vllm_prompt_logprobs(&entries, num_top, tokenizer));
        self.entries = Some(entries);
        json
    }

    /// The echoed prompt's text and log-probabilities, once (`None` after, or without `echo`).
    pub fn take_echo(&mut self, tokenizer: &TextTokenizer) -> Option<(String, Vec<TokenLogprob>)> {
        let echo = self.echo.take()?;
        let logprobs = match self.num_echo_logprobs {
            Some(num_top) => {
                let entries = self.entries.as_deref();
                let names = (tokenizer, self.naming);
                echo_logprobs(&echo.token_ids, entries, num_top, names)
            }
            None => Vec::new(),
        };
        Some((echo.text.clone(), logprobs))
    }
}

fn clamped(logprob: f32) -> f32 {
    logprob.max(MIN_LOGPROB)
}

/// vLLM's shape: `null` for the first token, then per token the prompt token's and each
/// alternative's `logprob`, `rank` and `decoded_token`, by token id.
fn vllm_prompt_logprobs(
    entries: &[PromptTokenLogprob],
    num_top: usize,
    tokenizer: &TextTokenizer,
) -> PromptLogprobs {
    let position = |entry: &PromptTokenLogprob| {
        let mut position = PromptPosition::default();
        let mut put = |id: u32, logprob: f32, rank: u32| {
            position.put(id, || PromptTokenEntry {
                logprob: clamped(logprob),
                rank,
                decoded_token: token_text(tokenizer, id),
            });
        };
        put(entry.token_id, entry.logprob, entry.rank);
        for (i, &(id, logprob)) in entry.top_logprobs.iter().take(num_top).enumerate() {
            put(id, logprob, i as u32 + 1);
        }
        Some(position)
    };
    let mut list = vec![None];
    list.extend(entries.iter().map(position));
    PromptLogprobs(list)
}

/// The echoed tokens' log-probabilities: none for the first token, then each from its entry
/// (alternatives cut to `num_top`); offsets count characters of the token texts.
fn echo_logprobs(
    token_ids: &[u32],
    entries: Option<&[PromptTokenLogprob]>,
    num_top: usize,
    (tokenizer, naming): (&TextTokenizer, TokenNaming),
) -> Vec<TokenLogprob> {
    let mut text_offset = 0;
    let mut logprobs = Vec::with_capacity(token_ids.len());
    for (position, &id) in token_ids.iter().enumerate() {
        let text = token_text(tokenizer, id);
        let entry = position
            .checked_sub(1)
            .and_then(|i| entries.and_then(|e| e.get(i)));
        logprobs.push(TokenLogprob {
            logprob: entry.map(|e| clamped(e.logprob)),
            top: entry
                .map(|e| {
                    let top = e.top_logprobs.iter().take(num_top);
                    top.map(|&(id, lp)| (naming.name(tokenizer, id), clamped(lp)))
                        .collect()
                })
                .unwrap_or_default(),
            text_offset,
            token: naming.name(tokenizer, id),
        });
        text_offset += text.chars().count();
    }
    logprobs
}
