//! One choice of a response: engine token events → text deltas (detokenized, stop strings
//! applied), log-probabilities, then a finish reason and usage. Records the choice's metrics.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::{self, BoxStream, StreamExt};

use pagoda_engine::{
    EngineHandle, FinishReason, GeneratedToken, PromptTokenLogprob, RequestStream, RequestTimings,
    TokenEvent, Usage,
};
use pagoda_text::detokenizer::IncrementalDetokenizer;
use pagoda_text::stop_strings::StopStringMatcher;

use crate::admission::WaitingSlot;
use crate::metrics::{FinishedSequence, Metrics};
use crate::openai::choices::events::{ChoiceEvent, DeltaBatcher};
use crate::openai::choices::logprob::TokenLogprob;
use crate::openai::choices::prompt_side::PromptSide;
use crate::openai::choices::stop_reason::StopReason;
use crate::openai::error::ApiError;
use crate::openai::request::plan::RequestPlan;
use pagoda_text::tokenizer::TextTokenizer;

/// Drives one engine request to its end.
#[derive(Debug)]
pub struct ChoiceRun {
    index: usize,
    stream: RequestStream,
    context: ChoiceContext,
    detokenizer: IncrementalDetokenizer,
    matcher: StopStringMatcher,
    waiting: Option<WaitingSlot>,
    last_token_at: Option<Instant>,
    num_tokens: usize,
    /// Characters of text the detokenizer has produced so far.
    num_text_chars: usize,
    /// Tokens generated up to and including the one that completed a stop string.
    stopped_after: Option<usize>,
    pending: VecDeque<ChoiceEvent>,
    /// `pending` cut by the stream interval, ready to send.
    batcher: DeltaBatcher,
    ready: VecDeque<ChoiceEvent>,
    done: bool,
    /// What a client that leaves early leaves behind, for the metrics.
    submitted: Instant,
    first_token_at: Option<Instant>,
    num_prompt_tokens: usize,
    prompt: PromptSide,
}

/// Everything one choice needs besides its engine stream.
#[derive(Debug, Clone)]
pub struct ChoiceContext {
    pub engine: EngineHandle,
    pub tokenizer: Arc<TextTokenizer>,
    pub metrics: Metrics,
    pub plan: Arc<RequestPlan>,
}

/// When and with what prompt an engine request was submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submission {
    pub at: Instant,
    pub num_prompt_tokens: usize,
}

impl ChoiceRun {
    pub fn new(
        index: usize,
        stream: RequestStream,
        context: ChoiceContext,
        waiting: WaitingSlot,
        submission: Submission,
        prompt: PromptSide,
    ) -> Self {
        let text = &context.plan.text;
        let detokenizer =
            IncrementalDetokenizer::new(Arc::clone(&context.tokenizer), text.skip_special_tokens);
        let batcher = DeltaBatcher::new(context.plan.reply.stream_interval);
        let matcher = if text.include_stop_str_in_output {
            StopStringMatcher::including_stop(text.stop_strings.clone())
        } else {
            StopStringMatcher::new(text.stop_strings.clone())
        };
        Self {
            index,
            stream,
            context,
            detokenizer,
            matcher,
            waiting: Some(waiting),
            last_token_at: None,
            num_tokens: 0,
            num_text_chars: 0,
            stopped_after: None,
            pending: VecDeque::new(),
            batcher,
            ready: VecDeque::new(),
            done: false,
            submitted: submission.at,
            first_token_at: None,
            num_prompt_tokens: submission.num_prompt_tokens,
            prompt,
        }
    }

    /// The choice's position in the response.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The prompt's token ids when `return_token_ids` asked for them and no delta carried them
    /// yet (chat's opening chunk carries them).
    pub fn prompt_token_ids(&self) -> Option<Arc<[u32]>> {
        self.prompt.token_ids.clone()
    }

    /// A delta of the choice; the first one carries the prompt's token ids when asked for.
    fn delta(
        &mut self,
        text: String,
        logprobs: Vec<TokenLogprob>,
        token_ids: Vec<u32>,
        is_last: bool,
    ) -> ChoiceEvent {
        ChoiceEvent::Delta {
            index: self.index,
            text,
            logprobs,
            num_tokens: token_ids.len(),
            is_last,
            token_ids,
            prompt_token_ids: self.prompt.take_token_ids(),
        }
    }

    /// The next event; `None` after the final one.
    pub async fn next(&mut self) -> Option<ChoiceEvent> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if let Some(event) = self.pending.pop_front() {
                self.batcher.push(event, &mut self.ready);
                continue;
            }
            if self.done {
                self.batcher.flush(&mut self.ready);
                return self.ready.pop_front();
            }
            let event = self.stream.next().await;
            self.handle(event);
        }
    }

    fn handle(&mut self, event: Option<TokenEvent>) {
        match event {
            Some(TokenEvent::PromptLogprobs(entries)) => self.on_prompt_logprobs(entries),
            Some(TokenEvent::Token(token)) => self.on_token(token),
            Some(TokenEvent::Finished {
                reason,
                usage,
                timings,
            }) => self.on_finished(reason, usage, timings),
            Some(TokenEvent::Error(error)) => self.fail(error.into()),
            None => self.fail(ApiError::shutting_down()),
        }
    }

    fn on_prompt_logprobs(&mut self, entries: Vec<PromptTokenLogprob>) {
        if let Some(logprobs) = self.prompt.on_entries(entries, &self.context.tokenizer) {
            self.pending.push_back(ChoiceEvent::PromptLogprobs {
                index: self.index,
                logprobs,
            });
        }
    }

    /// The echoed prompt, once, before anything generated.
    fn write_echo(&mut self) {
        let Some((text, logprobs)) = self.prompt.take_echo(&self.context.tokenizer) else {
            return;
        };
        self.num_text_chars += text.chars().count();
        let logprobs = match self.context.plan.logprobs().is_some() {
            true => logprobs,
            false => Vec::new(),
        };
        let delta = self.delta(text, logprobs, Vec::new(), false);
        self.pending.push_back(delta);
    }

    fn on_token(&mut self, token: GeneratedToken) {
        self.write_echo();
        self.waiting = None;
        // Tokens past a stop string (generated before the engine stopped) are not output, so
        // they are not timed either.
        if self.context.plan.echoes_prompt_only() || self.stopped_after.is_some() {
            return;
        }
        if let Some(previous) = self.last_token_at {
            self.context
                .metrics
                .record_inter_token_latency(token.at.saturating_duration_since(previous));
        }
        self.last_token_at = Some(token.at);
        self.first_token_at.get_or_insert(token.at);
        self.num_tokens += 1;
        // A stop token ends the choice (the engine bans it before `min_tokens`), and its text is
        // not part of the output unless asked for.
        let text_plan = &self.context.plan.text;
        let is_stop_token = !text_plan.include_stop_str_in_output
            && text_plan.ending_token_ids.contains(&token.token_id);
        let text = match is_stop_token {
            true => String::new(),
            false => match self.detokenizer.push(token.token_id) {
                Ok(text) => text,
                Err(error) => return self.fail(error.into()),
            },
        };
        let text_offset = self.num_text_chars;
        self.num_text_chars += text.chars().count();
        let filtered = match self.num_tokens <= self.context.plan.engine.stop.min_tokens {
            true => self.matcher.pass(&text),
            false => self.matcher.push(&text),
        };
        let logprobs = self.logprobs_of(&token, text_offset);
        if filtered.stopped {
            self.stopped_after = Some(self.num_tokens);
            let _ = self
                .context
                .engine
                .stop_after(self.stream.id(), self.num_tokens);
        }
        // One delta per token, as vLLM streams: its text is empty while it is held back (an
        // incomplete UTF-8 character, a possible stop string), so a client sees every token's
        // arrival, not a two-token gap.
        let is_last = token.is_last && !filtered.stopped;
        let delta = self.delta(filtered.text, logprobs, vec![token.token_id], is_last);
        self.pending.push_back(delta);
    }

    fn on_finished(&mut self, reason: FinishReason, mut usage: Usage, timings: RequestTimings) {
        self.done = true;
        self.write_echo();
        let reason = match self.stopped_after {
            _ if self.context.plan.echoes_prompt_only() && reason != FinishReason::Abort => {
                // `max_tokens: 0`: the one token generated is not part of the answer.
                usage.completion_tokens = 0;
                FinishReason::Length
            }
            Some(num_tokens) => {
                usage.completion_tokens = num_tokens;
                FinishReason::Stop {
                    stop_token_id: None,
                }
            }
            None => {
                let tail = self.detokenizer.finish().unwrap_or_default();
                let mut text = self.matcher.push(&tail).text;
                text.push_str(&self.matcher.finish());
                if !text.is_empty() {
                    let delta = self.delta(text, Vec::new(), Vec::new(), true);
                    self.pending.push_back(delta);
                }
                reason
            }
        };
        self.context.metrics.record_finished(&FinishedSequence {
            reason,
            usage,
            timings,
        });
        self.pending.push_back(ChoiceEvent::Finished {
            index: self.index,
            finish_reason: reason.as_str(),
            stop_reason: self.stop_reason(reason),
            usage,
            timings,
        });
    }

    fn stop_reason(&self, reason: FinishReason) -> Option<StopReason> {
        match reason {
            FinishReason::Stop { stop_token_id } => match self.matcher.matched_stop() {
                Some(text) => Some(StopReason::Text(text.to_string())),
                None => stop_token_id
                    .filter(|id| self.context.plan.text.listed_stop_token_ids.contains(id))
                    .map(StopReason::TokenId),
            },
            FinishReason::Repetition => Some(StopReason::Repetition),
            FinishReason::Length | FinishReason::Abort => None,
        }
    }

    fn fail(&mut self, error: ApiError) {
        self.done = true;
        self.context.metrics.record_failed();
        self.pending.push_back(ChoiceEvent::Error {
            index: self.index,
            error,
        });
    }

    fn logprobs_of(&self, token: &GeneratedToken, text_offset: usize) -> Vec<TokenLogprob> {
        let want_logprobs = self.context.plan.logprobs().is_some();
        let (true, Some(logprob)) = (want_logprobs, token.logprob) else {
            return Vec::new();
        };
        let naming = self.context.plan.reply.naming;
        let text_of = |id: u32| naming.name(&self.context.tokenizer, id);
        vec![TokenLogprob {
            token: text_of(token.token_id),
            logprob: Some(logprob),
            top: token
                .top_logprobs
                .iter()
                .map(|&(id, lp)| (text_of(id), lp))
                .collect(),
            text_offset,
        }]
    }
}

fn events_of(run: ChoiceRun) -> BoxStream<'static, ChoiceEvent> {
    stream::unfold(run, |mut run| async move {
        run.next().await.map(|event| (event, run))
    })
    .boxed()
}

/// Every choice's events, interleaved as they come.
pub fn merged(runs: Vec<ChoiceRun>) -> BoxStream<'static, ChoiceEvent> {
    stream::select_all(runs.into_iter().map(events_of)).boxed()
}

impl Drop for ChoiceRun {
    /// A client that went away drops its choices: the engine aborts the request (the stream's own
    /// drop), and the metrics count it as aborted, with what it had generated.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let now = Instant::now();
        self.context.metrics.record_finished(&FinishedSequence {
            reason: FinishReason::Abort,
            usage: Usage {
                prompt_tokens: self.num_prompt_tokens,
                completion_tokens: self.num_tokens,
                num_cached_tokens: 0,
                spec_decode: None,
            },
            timings: RequestTimings {
                queued: self.submitted,
                first_scheduled: None,
                first_token: self.first_token_at,
                finished: now,
                num_preemptions: 0,
            },
        });
    }
}
