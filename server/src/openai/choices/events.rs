//! What a choice produces, in order: token deltas, then one finish (or one error), with the
//! prompt log-probabilities before them when asked for; and vLLM's stream interval
//! (`--stream-interval N`, a request's `stream_interval`), which joins a streamed choice's token
//! deltas N tokens at a time instead of one by one — fewer SSE events and JSON encodings per
//! token at high concurrency. The first token's delta and the last one go out at once; anything
//! that is not a token's delta (echoed prompt, prompt log-probabilities, the finish, an error)
//! first sends what is held, so order and content never change, only how the deltas are cut.

use std::collections::VecDeque;
use std::sync::Arc;

use pagoda_engine::{RequestTimings, Usage};

use crate::openai::choices::logprob::TokenLogprob;
use crate::openai::choices::stop_reason::StopReason;
use crate::openai::error::ApiError;
use crate::openai::reply::format::DeltaParts;
use crate::openai::wire::prompt_logprobs::PromptLogprobs;

/// What a choice produces, in order: deltas, then one `Finished` (or one `Error`).
#[derive(Debug, Clone, PartialEq)]
pub enum ChoiceEvent {
    Delta {
        index: usize,
        text: String,
        logprobs: Vec<TokenLogprob>,
        /// Generated tokens it stands for: 1 for a token's delta, 0 for the echoed prompt or
        /// text flushed at the end.
        num_tokens: usize,
        /// The engine ended the choice with this token: `Finished` comes next.
        is_last: bool,
        /// The generated tokens it stands for (vLLM's `token_ids`, when asked for).
        token_ids: Vec<u32>,
        /// The prompt's token ids, on the choice's first delta when `return_token_ids` asked.
        prompt_token_ids: Option<Arc<[u32]>>,
    },
    Finished {
        index: usize,
        finish_reason: &'static str,
        /// vLLM's `stop_reason` (`None`: `null`).
        stop_reason: Option<StopReason>,
        usage: Usage,
        /// The engine's times for this choice (for `--request-timeline`).
        timings: RequestTimings,
    },
    Error {
        index: usize,
        error: ApiError,
    },
    /// vLLM's `prompt_logprobs` of the choice's prompt (before its first delta).
    PromptLogprobs {
        index: usize,
        logprobs: PromptLogprobs,
    },
}

impl ChoiceEvent {
    /// What a delta event writes (`None` for other events).
    pub fn delta_parts(&self) -> Option<DeltaParts<'_>> {
        match self {
            ChoiceEvent::Delta {
                index,
                text,
                logprobs,
                num_tokens,
                token_ids,
                prompt_token_ids,
                ..
            } => Some(DeltaParts {
                index: *index,
                text,
                logprobs,
                num_tokens: *num_tokens,
                token_ids,
                prompt_token_ids: prompt_token_ids.as_deref(),
            }),
            _ => None,
        }
    }
}

/// Joins one choice's consecutive token deltas into deltas of `interval` tokens.
#[derive(Debug)]
pub struct DeltaBatcher {
    interval: usize,
    num_tokens_seen: usize,
    held: Option<ChoiceEvent>,
}

impl DeltaBatcher {
    /// `interval` ≤ 1: every delta passes as it comes.
    pub fn new(interval: usize) -> Self {
        Self {
            interval,
            num_tokens_seen: 0,
            held: None,
        }
    }

    /// Takes the choice's next event; what is ready to send goes to `ready`.
    pub fn push(&mut self, event: ChoiceEvent, ready: &mut VecDeque<ChoiceEvent>) {
        let ChoiceEvent::Delta {
            num_tokens,
            is_last,
            ..
        } = &event
        else {
            self.flush(ready);
            return ready.push_back(event);
        };
        let (num_tokens, is_last) = (*num_tokens, *is_last);
        let is_first_token = self.num_tokens_seen == 0 && num_tokens > 0;
        self.num_tokens_seen += num_tokens;
        if self.interval <= 1 || num_tokens == 0 || is_first_token {
            self.flush(ready);
            return ready.push_back(event);
        }
        let held = match self.held.take() {
            Some(held) => joined(held, event),
            None => event,
        };
        if is_last || tokens_of(&held) >= self.interval {
            ready.push_back(held);
        } else {
            self.held = Some(held);
        }
    }

    /// Sends what is held (the choice ended without a last delta, or something else comes).
    pub fn flush(&mut self, ready: &mut VecDeque<ChoiceEvent>) {
        if let Some(held) = self.held.take() {
            ready.push_back(held);
        }
    }
}

fn tokens_of(event: &ChoiceEvent) -> usize {
    match event {
        ChoiceEvent::Delta { num_tokens, .. } => *num_tokens,
        _ => 0,
    }
}

/// `earlier` then `later` as one delta.
fn joined(earlier: ChoiceEvent, later: ChoiceEvent) -> ChoiceEvent {
    match (earlier, later) {
        (
            ChoiceEvent::Delta {
                index,
                mut text,
                mut logprobs,
                num_tokens,
                mut token_ids,
                prompt_token_ids,
                ..
            },
            ChoiceEvent::Delta {
                text: more_text,
                logprobs: more_logprobs,
                num_tokens: more_tokens,
                is_last,
                token_ids: more_ids,
                prompt_token_ids: later_prompt_ids,
                ..
            },
        ) => {
            text.push_str(&more_text);
            logprobs.extend(more_logprobs);
            token_ids.extend(more_ids);
            ChoiceEvent::Delta {
                index,
                text,
                logprobs,
                num_tokens: num_tokens + more_tokens,
                is_last,
                token_ids,
                prompt_token_ids: prompt_token_ids.or(later_prompt_ids),
            }
        }
        (earlier, _) => earlier,
    }
}

#[cfg(test)]
mod tests {
    use pagoda_engine::{RequestTimings, Usage};

    use super::*;

    fn token(text: &str, id: u32, is_last: bool) -> ChoiceEvent {
        ChoiceEvent::Delta {
            index: 0,
            text: text.to_string(),
            logprobs: Vec::new(),
            num_tokens: 1,
            is_last,
            token_ids: vec![id],
            prompt_token_ids: None,
        }
    }

    fn finished() -> ChoiceEvent {
        let now = std::time::Instant::now();
        ChoiceEvent::Finished {
            index: 0,
            finish_reason: "length",
            stop_reason: None,
            usage: Usage::default(),
            timings: RequestTimings {
                queued: now,
                first_scheduled: None,
                first_token: None,
                finished: now,
                num_preemptions: 0,
            },
        }
    }

    /// (text, token ids) of each delta sent, and whether the finish came last.
    fn batched(interval: usize, events: Vec<ChoiceEvent>) -> (Vec<(String, Vec<u32>)>, bool) {
        let mut batcher = DeltaBatcher::new(interval);
        let mut ready = VecDeque::new();
        for event in events {
            batcher.push(event, &mut ready);
        }
        batcher.flush(&mut ready);
        let ends_finished = matches!(ready.back(), Some(ChoiceEvent::Finished { .. }));
        let deltas = ready
            .into_iter()
            .filter_map(|event| match event {
                ChoiceEvent::Delta {
                    text, token_ids, ..
                } => Some((text, token_ids)),
                _ => None,
            })
            .collect();
        (deltas, ends_finished)
    }

    fn words(n: usize, last: bool) -> Vec<ChoiceEvent> {
        (0..n)
            .map(|i| token(&format!("w{i} "), i as u32, last && i + 1 == n))
            .collect()
    }

    #[test]
    fn tokens_go_out_by_the_interval_first_and_last_at_once() {
        let mut events = words(7, true);
        events.push(finished());
        let (deltas, ends_finished) = batched(3, events);
        let ids: Vec<Vec<u32>> = deltas.iter().map(|(_, ids)| ids.clone()).collect();
        assert_eq!(ids, [vec![0], vec![1, 2, 3], vec![4, 5, 6]]);
        assert_eq!(deltas[1].0, "w1 w2 w3 ");
        assert!(ends_finished);
        // The last token leaves at once, however few are held.
        let (deltas, _) = batched(4, words(3, true));
        let ids: Vec<Vec<u32>> = deltas.iter().map(|(_, ids)| ids.clone()).collect();
        assert_eq!(ids, [vec![0], vec![1, 2]]);
    }

    #[test]
    fn anything_else_sends_what_is_held_first_and_nothing_is_lost() {
        // A choice that ends without a last delta (a stop string): the held tokens precede the
        // finish.
        let mut events = words(4, false);
        events.push(finished());
        let (deltas, ends_finished) = batched(8, events);
        let text: String = deltas.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(text, "w0 w1 w2 w3 ");
        assert_eq!(deltas.len(), 2);
        assert!(ends_finished);
        // Interval 1: one delta per token, as without batching.
        let (deltas, _) = batched(1, words(5, true));
        assert_eq!(deltas.len(), 5);
    }
}
