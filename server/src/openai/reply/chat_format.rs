//! Chat completions' JSON, full and streamed, as OpenAI writes them: with a reasoning parser
//! each choice's thinking is split into `reasoning_content`, with tools the rest is read into
//! `tool_calls`.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use pagoda_text::reasoning::{ReasoningFormat, ReasoningStream};

use crate::openai::choices::logprob::TokenLogprob;
use crate::openai::reply::format::{
    ChoiceEnd, DeltaParts, FinishedChoice, ResponseFormat, ResponseMeta,
};
use crate::openai::request::chat_plan::ChatText;
use crate::openai::tools::legacy_functions::{legacy_choice, legacy_chunk_choice};
use crate::openai::tools::output::{finish_reason, message_parts, ChatDelta, ToolCallStream};
use crate::openai::wire::chat::{
    ChatChoice, ChatChunkChoice, ChatChunkDelta, ChatCompletion, ChatMessage,
};
use crate::openai::wire::logprobs::ChatLogprobs;
use crate::openai::wire::usage::{CompletionTokensDetails, Usage};
use crate::openai::wire::Nullable;

/// Chat completions; with a reasoning parser, each choice's thinking is split into
/// `reasoning_content`, and with tools, the rest is read into `tool_calls`.
#[derive(Debug)]
pub struct ChatFormat {
    meta: ResponseMeta,
    /// How the replies' text is read (tools, reasoning) and written (echo, role, legacy shape).
    text: ChatText,
    /// Each streamed choice's readers, by choice index.
    streams: Mutex<HashMap<usize, ChoiceReader>>,
}

/// One streamed choice's text readers: reasoning first, then tool calls on the content.
#[derive(Debug)]
struct ChoiceReader {
    reasoning: Option<ReasoningStream>,
    tools: Option<ToolCallStream>,
}

/// What a piece of a choice's text becomes.
#[derive(Debug, Default)]
struct ReadDelta {
    reasoning: String,
    chat: ChatDelta,
}

impl ChoiceReader {
    /// The text of `num_tokens` generated tokens.
    fn read(&mut self, text: &str, num_tokens: usize) -> ReadDelta {
        let (reasoning, content) = match &mut self.reasoning {
            Some(stream) => {
                let delta = stream.push_tokens(text, num_tokens);
                (delta.reasoning, delta.content)
            }
            None => (String::new(), text.to_string()),
        };
        self.with_content(reasoning, &content)
    }

    fn finish(&mut self) -> ReadDelta {
        let (reasoning, content) = match &mut self.reasoning {
            Some(stream) => {
                let delta = stream.finish();
                (delta.reasoning, delta.content)
            }
            None => (String::new(), String::new()),
        };
        let mut delta = self.with_content(reasoning, &content);
        if let Some(tools) = &mut self.tools {
            let last = tools.finish();
            delta.chat.content.push_str(&last.content);
            delta.chat.tool_calls.extend(last.tool_calls);
        }
        delta
    }

    fn with_content(&mut self, reasoning: String, content: &str) -> ReadDelta {
        let chat = match &mut self.tools {
            Some(tools) => tools.push(content),
            None => ChatDelta {
                content: content.to_string(),
                tool_calls: Vec::new(),
            },
        };
        ReadDelta { reasoning, chat }
    }
}

impl ChatFormat {
    pub fn new(meta: ResponseMeta, text: ChatText) -> Self {
        Self {
            meta,
            text,
            streams: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `read` on choice `index`'s readers, minus the reasoning when it is hidden.
    fn read_shown(
        &self,
        index: usize,
        read: impl FnOnce(&mut ChoiceReader) -> ReadDelta,
    ) -> ReadDelta {
        let mut delta = self.with_reader(index, read);
        if self.text.hide_reasoning {
            delta.reasoning.clear();
        }
        delta
    }

    /// A finished choice in the shape the request asked for.
    fn shaped(&self, choice: ChatChoice) -> ChatChoice {
        match self.text.legacy_functions {
            true => legacy_choice(choice),
            false => choice,
        }
    }

    /// Runs `read` on choice `index`'s readers (made on first use).
    fn with_reader<T>(&self, index: usize, read: impl FnOnce(&mut ChoiceReader) -> T) -> T {
        let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let reader = streams.entry(index).or_insert_with(|| ChoiceReader {
            reasoning: self.text.reasoning.map(ReasoningFormat::streaming),
            tools: self.text.tool_output.as_ref().map(ToolCallStream::new),
        });
        read(reader)
    }
}

impl ChatFormat {
    fn completion<C: Serialize>(&self, object: &'static str, choices: Vec<C>) -> ChatCompletion<C> {
        ChatCompletion {
            id: self.meta.id.clone(),
            object,
            created: self.meta.created_unix_s,
            model: self.meta.model.clone(),
            choices,
            usage: None,
            prompt_logprobs: None,
            prompt_token_ids: None,
        }
    }

    fn logprobs(&self, logprobs: &[TokenLogprob]) -> Option<ChatLogprobs> {
        self.meta.want_logprobs.then(|| ChatLogprobs::of(logprobs))
    }

    /// A streamed choice, in the shape the request asked for.
    fn chunk_choice(&self, choice: ChatChunkChoice) -> ChatChunkChoice {
        match self.text.legacy_functions {
            true => legacy_chunk_choice(choice),
            false => choice,
        }
    }
}

impl ResponseFormat for ChatFormat {
    type StreamChoice = ChatChunkChoice;
    type Chunk = ChatCompletion<ChatChunkChoice>;
    type Whole = ChatCompletion<ChatChoice>;

    fn chunk(&self, choices: Vec<ChatChunkChoice>, usage: Nullable<Usage>) -> Self::Chunk {
        ChatCompletion {
            usage: usage.map(|u| u.map(|u| self.with_details(u))),
            ..self.completion("chat.completion.chunk", choices)
        }
    }

    fn observe(&self, delta: DeltaParts<'_>) {
        if self.text.reasoning.is_some() {
            self.with_reader(delta.index, |reader| {
                if let Some(stream) = &mut reader.reasoning {
                    stream.push_tokens(delta.text, delta.num_tokens);
                }
            });
        }
    }

    fn completion_tokens_details(&self) -> Option<CompletionTokensDetails> {
        self.text.reasoning?;
        let streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let reasoning_tokens = streams
            .values()
            .filter_map(|reader| reader.reasoning.as_ref())
            .map(ReasoningStream::num_reasoning_tokens)
            .sum();
        Some(CompletionTokensDetails {
            reasoning_tokens: Some(reasoning_tokens),
            ..CompletionTokensDetails::default()
        })
    }

    fn opening_chunk(
        &self,
        index: usize,
        prompt_token_ids: Option<&[u32]>,
        usage: Nullable<Usage>,
    ) -> Option<Self::Chunk> {
        let delta = ChatChunkDelta {
            role: Some(self.text.role.clone()),
            content: Some(self.text.echo.clone().unwrap_or_default()),
            ..ChatChunkDelta::default()
        };
        Some(ChatCompletion {
            // vLLM's place for `return_token_ids`: the opening chunk's.
            prompt_token_ids: prompt_token_ids.map(<[u32]>::to_vec),
            ..self.chunk(vec![ChatChunkChoice::new(index, delta)], usage)
        })
    }

    fn delta_choice(
        &self,
        parts: DeltaParts<'_>,
        end: Option<&ChoiceEnd>,
    ) -> Option<ChatChunkChoice> {
        let DeltaParts {
            index,
            text,
            num_tokens,
            ..
        } = parts;
        let logprobs = self.logprobs(parts.logprobs);
        let delta = match self.text.tool_output.is_none() && self.text.reasoning.is_none() {
            true => content_delta(text.to_string()),
            false => {
                let read = self.read_shown(index, |reader| reader.read(text, num_tokens));
                let empty = read.reasoning.is_empty() && read.chat.is_empty();
                // Held text still sends its tokens' ids or log-probabilities (as vLLM does).
                let carries_tokens = self.meta.return_token_ids && !parts.token_ids.is_empty();
                match (empty, self.text.tool_output.is_some()) {
                    // With tools, text the parser holds gives no delta otherwise.
                    (true, true) if logprobs.is_none() && !carries_tokens => return None,
                    (true, true) => ChatChunkDelta::default(),
                    // Without, every token gives one (empty while a tag may be starting).
                    (true, false) => content_delta(String::new()),
                    _ => read_delta(read),
                }
            }
        };
        Some(self.chunk_choice(ChatChunkChoice {
            logprobs,
            finish_reason: end.map(|end| end.finish_reason.to_string()),
            stop_reason: end.map(|end| end.stop_reason.clone()),
            token_ids: self.meta.token_ids(parts.token_ids),
            ..ChatChunkChoice::new(index, delta)
        }))
    }

    fn joins_last_delta(&self) -> bool {
        // With tools or reasoning the end flushes the readers: a final choice of its own.
        self.text.tool_output.is_none() && self.text.reasoning.is_none()
    }

    fn final_choice(&self, index: usize, end: &ChoiceEnd) -> ChatChunkChoice {
        let reason = end.finish_reason;
        let finished = |delta, reason: &str| ChatChunkChoice {
            finish_reason: Some(reason.to_string()),
            stop_reason: Some(end.stop_reason.clone()),
            ..ChatChunkChoice::new(index, delta)
        };
        if self.text.tool_output.is_none() && self.text.reasoning.is_none() {
            return self.chunk_choice(finished(ChatChunkDelta::default(), reason));
        }
        let mut num_calls = 0;
        let delta = self.read_shown(index, |reader| {
            let delta = reader.finish();
            num_calls = reader.tools.as_ref().map_or(0, ToolCallStream::num_calls);
            delta
        });
        let reason = match &self.text.tool_output {
            Some(output) => finish_reason(output, num_calls, reason),
            None => reason,
        };
        self.chunk_choice(finished(read_delta(delta), reason))
    }

    fn response(&self, mut choices: Vec<FinishedChoice>, usage: Usage) -> Self::Whole {
        let prompt_logprobs = choices.first_mut().and_then(|c| c.prompt_logprobs.take());
        let prompt_token_ids = choices.first_mut().and_then(|c| c.prompt_token_ids.take());
        let choices: Vec<ChatChoice> = choices
            .into_iter()
            .map(|c| {
                let (message, finish_reason) = self.message(&c);
                let choice = ChatChoice {
                    index: c.index,
                    message,
                    logprobs: self.logprobs(&c.logprobs),
                    finish_reason,
                    stop_reason: c.stop_reason,
                    token_ids: self.meta.token_ids(&c.token_ids),
                };
                self.shaped(choice)
            })
            .collect();
        ChatCompletion {
            usage: Some(Some(self.with_details(usage))),
            prompt_logprobs,
            prompt_token_ids: prompt_token_ids.map(|ids| ids.to_vec()),
            ..self.completion("chat.completion", choices)
        }
    }
}

impl ChatFormat {
    /// A finished choice's message and finish reason.
    fn message(&self, choice: &FinishedChoice) -> (ChatMessage, String) {
        let (reasoning, text) = match self.text.reasoning {
            Some(format) => format.split(&choice.text),
            None => (None, choice.text.clone()),
        };
        let (content, calls) = match &self.text.tool_output {
            None => (Some(text), Vec::new()),
            Some(output) => message_parts(output, &text),
        };
        let content = match &self.text.echo {
            Some(echo) => Some(format!("{echo}{}", content.unwrap_or_default())),
            None => content,
        };
        let reason = match &self.text.tool_output {
            Some(output) => finish_reason(output, calls.len(), &choice.finish_reason).to_string(),
            None => choice.finish_reason.clone(),
        };
        let message = ChatMessage {
            role: self.text.role.clone(),
            content,
            tool_calls: (!calls.is_empty()).then_some(calls),
            reasoning_content: self
                .text
                .reasoning
                .is_some()
                .then(|| reasoning.filter(|_| !self.text.hide_reasoning)),
            function_call: None,
        };
        (message, reason)
    }
}

fn content_delta(content: String) -> ChatChunkDelta {
    ChatChunkDelta {
        content: Some(content),
        ..ChatChunkDelta::default()
    }
}

/// A streamed delta: `reasoning_content`, `content` and `tool_calls` when they have something.
fn read_delta(delta: ReadDelta) -> ChatChunkDelta {
    let some = |text: String| (!text.is_empty()).then_some(text);
    ChatChunkDelta {
        role: None,
        reasoning_content: some(delta.reasoning),
        content: some(delta.chat.content),
        tool_calls: (!delta.chat.tool_calls.is_empty()).then_some(delta.chat.tool_calls),
        function_call: None,
    }
}
