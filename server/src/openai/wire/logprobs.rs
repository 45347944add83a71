//! Log-probabilities as chat and completions write them (their shapes differ).

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use utoipa::ToSchema;

use crate::openai::choices::logprob::TokenLogprob;

/// Chat's `logprobs`: `{"content": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatLogprobs {
    pub content: Vec<ChatTokenLogprob>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatTokenLogprob {
    pub token: String,
    /// `-inf` (written `null`) for a token nothing predicts.
    pub logprob: f32,
    pub bytes: Vec<u8>,
    pub top_logprobs: Vec<ChatTopLogprob>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatTopLogprob {
    pub token: String,
    pub logprob: f32,
    pub bytes: Vec<u8>,
}

impl ChatLogprobs {
    pub fn of(logprobs: &[TokenLogprob]) -> Self {
        let top = |token: &str, logprob: f32| ChatTopLogprob {
            token: token.to_string(),
            logprob,
            bytes: token.as_bytes().to_vec(),
        };
        let content = logprobs
            .iter()
            .map(|lp| ChatTokenLogprob {
                token: lp.token.clone(),
                logprob: lp.logprob.unwrap_or(f32::NEG_INFINITY),
                bytes: lp.token.as_bytes().to_vec(),
                top_logprobs: lp.top.iter().map(|(t, l)| top(t, *l)).collect(),
            })
            .collect();
        Self { content }
    }
}

/// Completions' `logprobs`: parallel lists; offsets count characters from the start of the
/// choice's text, the same whether streamed or not.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct CompletionLogprobs {
    pub tokens: Vec<String>,
    /// `null` for an echoed prompt's first token, which nothing predicts.
    pub token_logprobs: Vec<Option<f32>>,
    #[schema(value_type = Vec<Option<std::collections::HashMap<String, f32>>>)]
    pub top_logprobs: Vec<Option<TopLogprobMap>>,
    pub text_offset: Vec<usize>,
}

/// One token's alternatives as a JSON object, token → log-probability, in order: the chosen
/// token first, then the most likely ones not already listed (OpenAI's N + 1 rule for
/// completions, as vLLM writes it).
#[derive(Debug, Clone, PartialEq)]
pub struct TopLogprobMap(pub Vec<(String, f32)>);

impl Serialize for TopLogprobMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (token, logprob) in &self.0 {
            map.serialize_entry(token, logprob)?;
        }
        map.end()
    }
}

impl CompletionLogprobs {
    pub fn of(logprobs: &[TokenLogprob]) -> Self {
        let alternatives = |lp: &TokenLogprob| {
            let chosen = lp.logprob?;
            let mut entries = vec![(lp.token.clone(), chosen)];
            for (token, logprob) in &lp.top {
                if !entries.iter().any(|(t, _)| t == token) {
                    entries.push((token.clone(), *logprob));
                }
            }
            Some(TopLogprobMap(entries))
        };
        Self {
            tokens: logprobs.iter().map(|lp| lp.token.clone()).collect(),
            token_logprobs: logprobs.iter().map(|lp| lp.logprob).collect(),
            top_logprobs: logprobs.iter().map(alternatives).collect(),
            text_offset: logprobs.iter().map(|lp| lp.text_offset).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn logprob(
        token: &str,
        logprob: Option<f32>,
        top: &[(&str, f32)],
        offset: usize,
    ) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, l)| (t.to_string(), *l)).collect(),
            text_offset: offset,
        }
    }

    #[test]
    fn completion_logprobs_list_the_chosen_token_first_once() {
        let lps = [
            logprob("Hi", None, &[], 0),
            logprob(" there", Some(-0.5), &[("!", -0.25), (" there", -0.5)], 2),
        ];
        let value = serde_json::to_value(CompletionLogprobs::of(&lps)).expect("serializes");
        assert_eq!(
            value,
            json!({"tokens": ["Hi", " there"], "token_logprobs": [null, -0.5],
                "top_logprobs": [null, {" there": -0.5, "!": -0.25}], "text_offset": [0, 2]})
        );
        let keys: Vec<&String> = value["top_logprobs"][1]
            .as_object()
            .expect("a map")
            .keys()
            .collect();
        assert_eq!(keys, [" there", "!"], "the chosen token first");
    }

    #[test]
    fn chat_logprobs_carry_bytes_and_write_minus_infinity_as_null() {
        let lps = [logprob("é", None, &[("a", -1.0)], 0)];
        let value = serde_json::to_value(ChatLogprobs::of(&lps)).expect("serializes");
        assert_eq!(
            value,
            json!({"content": [{"token": "é", "logprob": null, "bytes": [195, 169],
                "top_logprobs": [{"token": "a", "logprob": -1.0, "bytes": [97]}]}]})
        );
    }
}
