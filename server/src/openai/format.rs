//! The JSON shapes of chat and text completions, full and streamed, as OpenAI writes them.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use pagoda_text::reasoning::{ReasoningFormat, ReasoningStream};

use crate::openai::logprob::TokenLogprob;
use crate::openai::tool_output::{
    finish_reason, message_parts, ChatDelta, ToolCallStream, ToolOutput,
};

/// How one endpoint writes its objects.
pub trait ResponseFormat: Send + Sync + 'static {
    /// A streamed chunk with the given choices (`choices` may be empty for the usage chunk).
    fn chunk(&self, choices: Vec<Value>, usage: Option<Value>) -> Value;
    /// The opening delta of a choice (chat: the role), if the endpoint has one.
    fn opening_choice(&self, index: usize) -> Option<Value>;
    /// The streamed choice a text delta becomes (`None`: nothing to send yet).
    fn delta_choice(&self, index: usize, text: &str, logprobs: &[TokenLogprob]) -> Option<Value>;
    fn final_choice(&self, index: usize, finish_reason: &str) -> Value;
    /// Whether a choice's last delta carries its finish reason (one chunk, as vLLM's server
    /// writes it), instead of a delta, then a final choice of its own. A separate empty final
    /// chunk would count as one more token for a client that times every chunk (vLLM's, on
    /// completions).
    fn joins_last_delta(&self) -> bool {
        true
    }
    /// The whole non-streamed response.
    fn response(&self, choices: Vec<FinishedChoice>, usage: Value) -> Value;
}

/// A choice of a non-streamed response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FinishedChoice {
    pub index: usize,
    pub text: String,
    pub finish_reason: String,
    pub logprobs: Vec<TokenLogprob>,
    /// vLLM's `prompt_logprobs`, when asked for.
    pub prompt_logprobs: Option<Value>,
}

/// The response identity shared by every chunk of one response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseMeta {
    pub id: String,
    pub created_unix_s: u64,
    pub model: String,
    pub want_logprobs: bool,
}

/// Chat completions; with a reasoning parser, each choice's thinking is split into
/// `reasoning_content`, and with tools, the rest is read into `tool_calls`.
#[derive(Debug)]
pub struct ChatFormat {
    meta: ResponseMeta,
    tools: Option<ToolOutput>,
    reasoning: Option<ReasoningFormat>,
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
    fn read(&mut self, text: &str) -> ReadDelta {
        let (reasoning, content) = match &mut self.reasoning {
            Some(stream) => {
                let delta = stream.push(text);
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
        }
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

#[derive(Debug, Clone, PartialEq)]
pub struct CompletionFormat(pub ResponseMeta);

fn envelope(meta: &ResponseMeta, object: &str, choices: Vec<Value>) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("id".into(), Value::from(meta.id.clone()));
    map.insert("object".into(), Value::from(object));
    map.insert("created".into(), Value::from(meta.created_unix_s));
    map.insert("model".into(), Value::from(meta.model.clone()));
    map.insert("choices".into(), Value::Array(choices));
    map
}

fn chat_logprobs(logprobs: &[TokenLogprob]) -> Value {
    let entry = |token: &str, logprob: f32| json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()});
    let content: Vec<Value> = logprobs
        .iter()
        .map(|lp| {
            let mut item = entry(&lp.token, lp.logprob.unwrap_or(f32::NEG_INFINITY));
            item["top_logprobs"] = lp.top.iter().map(|(t, l)| entry(t, *l)).collect();
            item
        })
        .collect();
    json!({ "content": content })
}

impl ResponseFormat for ChatFormat {
    fn chunk(&self, choices: Vec<Value>, usage: Option<Value>) -> Value {
        let mut map = envelope(&self.meta, "chat.completion.chunk", choices);
        if let Some(usage) = usage {
            map.insert("usage".into(), usage);
        }
        Value::Object(map)
    }

    fn opening_choice(&self, index: usize) -> Option<Value> {
        Some(
            json!({"index": index, "delta": {"role": "assistant", "content": ""},
            "logprobs": null, "finish_reason": null}),
        )
    }

    fn delta_choice(&self, index: usize, text: &str, logprobs: &[TokenLogprob]) -> Option<Value> {
        let logprobs = if self.meta.want_logprobs {
            chat_logprobs(logprobs)
        } else {
            Value::Null
        };
        if self.tools.is_none() && self.reasoning.is_none() {
            return Some(json!({"index": index, "delta": {"content": text},
                "logprobs": logprobs, "finish_reason": null}));
        }
        let delta = self.with_reader(index, |reader| reader.read(text));
        let empty = delta.reasoning.is_empty() && delta.chat.is_empty();
        let delta = match (empty, self.tools.is_some()) {
            // With tools, text the parser holds gives no delta (unless it has log-probabilities).
            (true, true) if logprobs.is_null() => return None,
            // Without, every token gives one (empty while a tag may be starting).
            (true, false) => json!({"content": ""}),
            _ => delta_json(delta),
        };
        Some(json!({"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": null}))
    }

    fn joins_last_delta(&self) -> bool {
        // With tools or reasoning the end flushes the readers: a final choice of its own.
        self.tools.is_none() && self.reasoning.is_none()
    }

    fn final_choice(&self, index: usize, reason: &str) -> Value {
        if self.tools.is_none() && self.reasoning.is_none() {
            return json!({"index": index, "delta": {}, "logprobs": null, "finish_reason": reason});
        }
        let (delta, num_calls) = self.with_reader(index, |reader| {
            let delta = reader.finish();
            (
                delta,
                reader.tools.as_ref().map_or(0, ToolCallStream::num_calls),
            )
        });
        let reason = match &self.tools {
            Some(output) => finish_reason(output, num_calls, reason),
            None => reason,
        };
        json!({"index": index, "delta": delta_json(delta),
            "logprobs": null, "finish_reason": reason})
    }

    fn response(&self, mut choices: Vec<FinishedChoice>, usage: Value) -> Value {
        let prompt_logprobs = choices.first_mut().and_then(|c| c.prompt_logprobs.take());
        let choices = choices
            .into_iter()
            .map(|c| {
                let logprobs = if self.meta.want_logprobs {
                    chat_logprobs(&c.logprobs)
                } else {
                    Value::Null
                };
                let (message, reason) = self.message(&c);
                json!({"index": c.index, "message": message,
                    "logprobs": logprobs, "finish_reason": reason})
            })
            .collect();
        let mut map = envelope(&self.meta, "chat.completion", choices);
        map.insert("usage".into(), usage);
        if let Some(logprobs) = prompt_logprobs {
            // vLLM's place: the response's, as every choice has the same prompt.
            map.insert("prompt_logprobs".into(), logprobs);
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
            None => json!({"role": "assistant", "content": text}),
            Some(output) => {
                let (content, calls) = message_parts(output, &text);
                let mut message = json!({"role": "assistant", "content": content});
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(calls);
                }
                message
            }
        };
        if self.reasoning.is_some() {
            message["reasoning_content"] = reasoning.map_or(Value::Null, Value::from);
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

/// `/v1/completions` log-probabilities; offsets count characters from the start of the choice's
/// text, the same whether streamed or not; `top_logprobs` holds the chosen token besides the
/// most likely ones.
fn completion_logprobs(logprobs: &[TokenLogprob]) -> Value {
    let mut tokens = Vec::new();
    let mut token_logprobs = Vec::new();
    let mut top = Vec::new();
    let mut offsets = Vec::new();
    for lp in logprobs {
        tokens.push(Value::from(lp.token.clone()));
        // An echoed prompt's first token has neither (`null`, as OpenAI writes it).
        token_logprobs.push(lp.logprob.map_or(Value::Null, Value::from));
        // The chosen token and the most likely ones (up to N + 1 entries, OpenAI's rule for
        // completions, as vLLM writes it).
        let chosen = lp.logprob.map(|l| (lp.token.clone(), Value::from(l)));
        let mut alternatives: Map<String, Value> = chosen.into_iter().collect();
        for (token, logprob) in &lp.top {
            alternatives
                .entry(token.clone())
                .or_insert_with(|| Value::from(*logprob));
        }
        top.push(match lp.logprob {
            Some(_) => Value::Object(alternatives),
            None => Value::Null,
        });
        offsets.push(Value::from(lp.text_offset));
    }
    json!({"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top,
        "text_offset": offsets})
}

impl ResponseFormat for CompletionFormat {
    fn chunk(&self, choices: Vec<Value>, usage: Option<Value>) -> Value {
        let mut map = envelope(&self.0, "text_completion", choices);
        if let Some(usage) = usage {
            map.insert("usage".into(), usage);
        }
        Value::Object(map)
    }

    fn opening_choice(&self, _index: usize) -> Option<Value> {
        None
    }

    fn delta_choice(&self, index: usize, text: &str, logprobs: &[TokenLogprob]) -> Option<Value> {
        let logprobs = if self.0.want_logprobs {
            completion_logprobs(logprobs)
        } else {
            Value::Null
        };
        Some(json!({"index": index, "text": text, "logprobs": logprobs, "finish_reason": null}))
    }

    fn final_choice(&self, index: usize, finish_reason: &str) -> Value {
        json!({"index": index, "text": "", "logprobs": null, "finish_reason": finish_reason})
    }

    fn response(&self, choices: Vec<FinishedChoice>, usage: Value) -> Value {
        let choices = choices
            .into_iter()
            .map(|c| {
                let logprobs = if self.0.want_logprobs {
                    completion_logprobs(&c.logprobs)
                } else {
                    Value::Null
                };
                let mut choice = json!({"index": c.index, "text": c.text, "logprobs": logprobs,
                    "finish_reason": c.finish_reason});
                if let Some(prompt_logprobs) = c.prompt_logprobs {
                    choice["prompt_logprobs"] = prompt_logprobs;
                }
                choice
            })
            .collect();
        let mut map = envelope(&self.0, "text_completion", choices);
        map.insert("usage".into(), usage);
        Value::Object(map)
    }
}
