//! Chat completions' JSON, full and streamed, as OpenAI writes them: with a reasoning parser
//! each choice's thinking is split into `reasoning_content`, with tools the rest is read into
//! `tool_calls`.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use pagoda_text::reasoning::{ReasoningFormat, ReasoningStream};

use crate::openai::format::{envelope, DeltaParts, FinishedChoice, ResponseFormat, ResponseMeta};
use crate::openai::legacy_functions::to_legacy_choice;
use crate::openai::logprob::TokenLogprob;
use crate::openai::stop_reason::StopReason;
use crate::openai::tool_output::{
    finish_reason, message_parts, ChatDelta, ToolCallStream, ToolOutput,
};
use crate::openai::wire::logprobs::ChatLogprobs;
use crate::openai::wire::usage::{CompletionTokensDetails, Usage};
use crate::openai::wire::Nullable;

/// Chat completions; with a reasoning parser, each choice's thinking is split into
/// `reasoning_content`, and with tools, the rest is read into `tool_calls`.
#[derive(Debug)]
pub struct ChatFormat {
    meta: ResponseMeta,
    tools: Option<ToolOutput>,
    reasoning: Option<ReasoningFormat>,
    /// Each streamed choice's readers, by choice index.
    streams: Mutex<HashMap<usize, ChoiceReader>>,
    /// vLLM's chat `echo`: the final assistant message the output continues, written first.
    echo: Option<String>,
    /// The replies' role (`assistant` unless `--response-role` or the prompt's ending says).
    role: String,
    /// The request offered deprecated `functions`: calls are answered as `function_call`.
    legacy_functions: bool,
    /// vLLM's `include_reasoning: false`: the thinking is split off and left out.
    hide_reasoning: bool,
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
    pub fn new(
        meta: ResponseMeta,
        tools: Option<ToolOutput>,
        reasoning: Option<ReasoningFormat>,
    ) -> Self {
        Self {
            meta,
            tools,
            reasoning,
            streams: Mutex::new(HashMap::new()),
            echo: None,
            role: "assistant".into(),
            legacy_functions: false,
            hide_reasoning: false,
        }
    }

    /// Leaves the reasoning out of the replies (vLLM's `include_reasoning: false`); it is still
    /// split from the answer and counted in the usage.
    pub fn with_reasoning_hidden(mut self, hide_reasoning: bool) -> Self {
        self.hide_reasoning = hide_reasoning;
        self
    }

    /// Runs `read` on choice `index`'s readers, minus the reasoning when it is hidden.
    fn read_shown(
        &self,
        index: usize,
        read: impl FnOnce(&mut ChoiceReader) -> ReadDelta,
    ) -> ReadDelta {
        let mut delta = self.with_reader(index, read);
        if self.hide_reasoning {
            delta.reasoning.clear();
        }
        delta
    }

    /// Answers calls in the shape of the deprecated `functions` (`function_call`).
    pub fn with_legacy_functions(mut self, legacy_functions: bool) -> Self {
        self.legacy_functions = legacy_functions;
        self
    }

    /// A finished choice in the shape the request asked for.
    fn shaped(&self, mut choice: Value) -> Value {
        if self.legacy_functions {
            to_legacy_choice(&mut choice);
        }
        choice
    }

    /// The role written in every choice's message (and the first delta of a stream).
    pub fn with_role(mut self, role: String) -> Self {
        self.role = role;
        self
    }

    /// Writes `echo` before every choice's content (vLLM's chat `echo`).
    pub fn with_echo(mut self, echo: Option<String>) -> Self {
        self.echo = echo;
        self
    }

    /// Runs `read` on choice `index`'s readers (made on first use).
    fn with_reader<T>(&self, index: usize, read: impl FnOnce(&mut ChoiceReader) -> T) -> T {
        let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let reader = streams.entry(index).or_insert_with(|| ChoiceReader {
            reasoning: self.reasoning.map(ReasoningFormat::streaming),
            tools: self.tools.as_ref().map(ToolCallStream::new),
        });
        read(reader)
    }
}

fn chat_logprobs(logprobs: &[TokenLogprob]) -> Value {
    serde_json::to_value(ChatLogprobs::of(logprobs)).expect("logprobs serialize")
}

fn usage_value(usage: Usage) -> Value {
    serde_json::to_value(usage).expect("usage serializes")
}

impl ResponseFormat for ChatFormat {
    fn chunk(&self, choices: Vec<Value>, usage: Nullable<Usage>) -> Value {
        let mut map = envelope(&self.meta, "chat.completion.chunk", choices);
        if let Some(usage) = usage {
            let usage = usage.map(|u| usage_value(self.with_details(u)));
            map.insert("usage".into(), usage.unwrap_or(Value::Null));
        }
        Value::Object(map)
    }

    fn observe(&self, delta: DeltaParts<'_>) {
        if self.reasoning.is_some() {
            self.with_reader(delta.index, |reader| {
                if let Some(stream) = &mut reader.reasoning {
                    stream.push_tokens(delta.text, delta.num_tokens);
                }
            });
        }
    }

    fn completion_tokens_details(&self) -> Option<CompletionTokensDetails> {
        self.reasoning?;
        let streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let reasoning_tokens = streams
            .values()
            .filter_map(|reader| reader.reasoning.as_ref())
            .map(ReasoningStream::num_reasoning_tokens)
            .sum();
        Some(CompletionTokensDetails { reasoning_tokens })
    }

    fn opening_choice(&self, index: usize) -> Option<Value> {
        let content = self.echo.as_deref().unwrap_or("");
        Some(
            json!({"index": index, "delta": {"role": self.role, "content": content},
            "logprobs": null, "finish_reason": null}),
        )
    }

    fn delta_choice(&self, parts: DeltaParts<'_>) -> Option<Value> {
        let DeltaParts {
            index,
            text,
            num_tokens,
            ..
        } = parts;
        let logprobs = if self.meta.want_logprobs {
            chat_logprobs(parts.logprobs)
        } else {
            Value::Null
        };
        let delta = match self.tools.is_none() && self.reasoning.is_none() {
            true => json!({"content": text}),
            false => {
                let read = self.read_shown(index, |reader| reader.read(text, num_tokens));
                let empty = read.reasoning.is_empty() && read.chat.is_empty();
                // Held text still sends its tokens' ids or log-probabilities (as vLLM does).
                let carries_tokens = self.meta.return_token_ids && !parts.token_ids.is_empty();
                match (empty, self.tools.is_some()) {
                    // With tools, text the parser holds gives no delta otherwise.
                    (true, true) if logprobs.is_null() && !carries_tokens => return None,
                    (true, true) => json!({}),
                    // Without, every token gives one (empty while a tag may be starting).
                    (true, false) => json!({"content": ""}),
                    _ => delta_json(read),
                }
            }
        };
        let mut choice =
            json!({"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": null});
        self.meta.put_token_ids(&mut choice, parts.token_ids);
        Some(self.shaped(choice))
    }

    fn joins_last_delta(&self) -> bool {
        // With tools or reasoning the end flushes the readers: a final choice of its own.
        self.tools.is_none() && self.reasoning.is_none()
    }

    fn final_choice(&self, index: usize, reason: &str) -> Value {
        if self.tools.is_none() && self.reasoning.is_none() {
            return json!({"index": index, "delta": {}, "logprobs": null, "finish_reason": reason});
        }
        let mut num_calls = 0;
        let delta = self.read_shown(index, |reader| {
            let delta = reader.finish();
            num_calls = reader.tools.as_ref().map_or(0, ToolCallStream::num_calls);
            delta
        });
        let reason = match &self.tools {
            Some(output) => finish_reason(output, num_calls, reason),
            None => reason,
        };
        self.shaped(json!({"index": index, "delta": delta_json(delta),
            "logprobs": null, "finish_reason": reason}))
    }

    fn response(&self, mut choices: Vec<FinishedChoice>, usage: Usage) -> Value {
        let usage = usage_value(self.with_details(usage));
        let prompt_logprobs = choices.first_mut().and_then(|c| c.prompt_logprobs.take());
        let prompt_token_ids = choices.first_mut().and_then(|c| c.prompt_token_ids.take());
        let choices = choices
            .into_iter()
            .map(|c| {
                let logprobs = if self.meta.want_logprobs {
                    chat_logprobs(&c.logprobs)
                } else {
                    Value::Null
                };
                let (message, reason) = self.message(&c);
                let mut choice = json!({"index": c.index, "message": message,
                    "logprobs": logprobs, "finish_reason": reason,
                    "stop_reason": StopReason::to_json(c.stop_reason.as_ref())});
                self.meta.put_token_ids(&mut choice, &c.token_ids);
                self.shaped(choice)
            })
            .collect();
        let mut map = envelope(&self.meta, "chat.completion", choices);
        map.insert("usage".into(), usage);
        if let Some(logprobs) = prompt_logprobs {
            // vLLM's place: the response's, as every choice has the same prompt.
            map.insert("prompt_logprobs".into(), logprobs);
        }
        if let Some(ids) = prompt_token_ids {
            // vLLM's place in chat: the response's (every choice has the same prompt).
            map.insert("prompt_token_ids".into(), Value::from(ids.to_vec()));
        }
        Value::Object(map)
    }
}

impl ChatFormat {
    /// A finished choice's message and finish reason.
    fn message(&self, choice: &FinishedChoice) -> (Value, String) {
        let (reasoning, text) = match self.reasoning {
            Some(format) => format.split(&choice.text),
            None => (None, choice.text.clone()),
        };
        let mut message = match &self.tools {
            None => json!({"role": self.role, "content": text}),
            Some(output) => {
                let (content, calls) = message_parts(output, &text);
                let mut message = json!({"role": self.role, "content": content});
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(calls);
                }
                message
            }
        };
        if self.reasoning.is_some() {
            let shown = reasoning.filter(|_| !self.hide_reasoning);
            message["reasoning_content"] = shown.map_or(Value::Null, Value::from);
        }
        if let Some(echo) = &self.echo {
            let content = message["content"].as_str().unwrap_or("");
            message["content"] = Value::from(format!("{echo}{content}"));
        }
        let num_calls = message["tool_calls"].as_array().map_or(0, Vec::len);
        let reason = match &self.tools {
            Some(output) => finish_reason(output, num_calls, &choice.finish_reason).to_string(),
            None => choice.finish_reason.clone(),
        };
        (message, reason)
    }
}

/// A streamed delta: `reasoning_content`, `content` and `tool_calls` when they have something.
fn delta_json(delta: ReadDelta) -> Value {
    let mut json = Map::new();
    if !delta.reasoning.is_empty() {
        json.insert("reasoning_content".into(), Value::from(delta.reasoning));
    }
    if !delta.chat.content.is_empty() {
        json.insert("content".into(), Value::from(delta.chat.content));
    }
    if !delta.chat.tool_calls.is_empty() {
        json.insert("tool_calls".into(), Value::Array(delta.chat.tool_calls));
    }
    Value::Object(json)
}
