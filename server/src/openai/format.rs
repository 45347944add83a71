//! The JSON shapes of chat and text completions, full and streamed, as OpenAI writes them.

use serde_json::{json, Map, Value};

use crate::openai::choice::TokenLogprob;

/// How one endpoint writes its objects.
pub trait ResponseFormat: Send + Sync + 'static {
    /// A streamed chunk with the given choices (`choices` may be empty for the usage chunk).
    fn chunk(&self, choices: Vec<Value>, usage: Option<Value>) -> Value;
    /// The opening delta of a choice (chat: the role), if the endpoint has one.
    fn opening_choice(&self, index: usize) -> Option<Value>;
    fn delta_choice(&self, index: usize, text: &str, logprobs: &[TokenLogprob]) -> Value;
    fn final_choice(&self, index: usize, finish_reason: &str) -> Value;
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
}

/// The response identity shared by every chunk of one response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseMeta {
    pub id: String,
    pub created_unix_s: u64,
    pub model: String,
    pub want_logprobs: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatFormat(pub ResponseMeta);

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
            let mut item = entry(&lp.token, lp.logprob);
            item["top_logprobs"] = lp.top.iter().map(|(t, l)| entry(t, *l)).collect();
            item
        })
        .collect();
    json!({ "content": content })
}

impl ResponseFormat for ChatFormat {
    fn chunk(&self, choices: Vec<Value>, usage: Option<Value>) -> Value {
        let mut map = envelope(&self.0, "chat.completion.chunk", choices);
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

    fn delta_choice(&self, index: usize, text: &str, logprobs: &[TokenLogprob]) -> Value {
        let logprobs = if self.0.want_logprobs {
            chat_logprobs(logprobs)
        } else {
            Value::Null
        };
        json!({"index": index, "delta": {"content": text}, "logprobs": logprobs, "finish_reason": null})
    }

    fn final_choice(&self, index: usize, finish_reason: &str) -> Value {
        json!({"index": index, "delta": {}, "logprobs": null, "finish_reason": finish_reason})
    }

    fn response(&self, choices: Vec<FinishedChoice>, usage: Value) -> Value {
        let choices = choices
            .into_iter()
            .map(|c| {
                let logprobs = if self.0.want_logprobs {
                    chat_logprobs(&c.logprobs)
                } else {
                    Value::Null
                };
                json!({"index": c.index,
                    "message": {"role": "assistant", "content": c.text},
                    "logprobs": logprobs, "finish_reason": c.finish_reason})
            })
            .collect();
        let mut map = envelope(&self.0, "chat.completion", choices);
        map.insert("usage".into(), usage);
        Value::Object(map)
    }
}

/// `/v1/completions` log-probabilities; offsets count characters from the start of the choice's
/// generated text, the same whether streamed or not.
fn completion_logprobs(logprobs: &[TokenLogprob]) -> Value {
    let mut tokens = Vec::new();
    let mut token_logprobs = Vec::new();
    let mut top = Vec::new();
    let mut offsets = Vec::new();
    for lp in logprobs {
        tokens.push(Value::from(lp.token.clone()));
        token_logprobs.push(Value::from(lp.logprob));
        let alternatives: Map<String, Value> = lp
            .top
            .iter()
            .map(|(t, l)| (t.clone(), Value::from(*l)))
            .collect();
        top.push(Value::Object(alternatives));
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

    fn delta_choice(&self, index: usize, text: &str, logprobs: &[TokenLogprob]) -> Value {
        let logprobs = if self.0.want_logprobs {
            completion_logprobs(logprobs)
        } else {
            Value::Null
        };
        json!({"index": index, "text": text, "logprobs": logprobs, "finish_reason": null})
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
                json!({"index": c.index, "text": c.text, "logprobs": logprobs,
                    "finish_reason": c.finish_reason})
            })
            .collect();
        let mut map = envelope(&self.0, "text_completion", choices);
        map.insert("usage".into(), usage);
        Value::Object(map)
    }
}
