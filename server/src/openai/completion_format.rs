//! The JSON shapes of text completions (`/v1/completions`), full and streamed, as OpenAI writes
//! them.

use serde_json::{json, Map, Value};

use crate::openai::format::{envelope, DeltaParts, FinishedChoice, ResponseFormat, ResponseMeta};
use crate::openai::logprob::TokenLogprob;
use crate::openai::stop_reason::StopReason;

#[derive(Debug, Clone, PartialEq)]
pub struct CompletionFormat(pub ResponseMeta);

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

    fn delta_choice(&self, parts: DeltaParts<'_>) -> Option<Value> {
        let logprobs = if self.0.want_logprobs {
            completion_logprobs(parts.logprobs)
        } else {
            Value::Null
        };
        let mut choice = json!({"index": parts.index, "text": parts.text, "logprobs": logprobs,
            "finish_reason": null});
        if let Some(ids) = parts.prompt_token_ids {
            choice["prompt_token_ids"] = Value::from(ids.to_vec());
        }
        self.0.put_token_ids(&mut choice, parts.token_ids);
        Some(choice)
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
                    "finish_reason": c.finish_reason,
                    "stop_reason": StopReason::to_json(c.stop_reason.as_ref())});
                if let Some(prompt_logprobs) = c.prompt_logprobs {
                    choice["prompt_logprobs"] = prompt_logprobs;
                }
                if let Some(ids) = c.prompt_token_ids {
                    // vLLM's place in completions: the choice's (each prompt has its own).
                    choice["prompt_token_ids"] = Value::from(ids.to_vec());
                }
                self.0.put_token_ids(&mut choice, &c.token_ids);
                choice
            })
            .collect();
        let mut map = envelope(&self.0, "text_completion", choices);
        map.insert("usage".into(), usage);
        Value::Object(map)
    }
}
