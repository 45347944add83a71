//! The request bodies of `/v1/chat/completions` and `/v1/completions`, as OpenAI (and vLLM's
//! extensions) spell them. Unknown fields are ignored, as OpenAI does.

use pagoda_text::template::ChatMessage;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::openai::request::prediction::PredictionField;
use crate::openai::request::unsupported_fields::UnsupportedFields;

/// `stop`: one string or a list of them.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
#[serde(untagged)]
pub enum StopField {
    One(String),
    Many(Vec<String>),
}

impl StopField {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            StopField::One(s) => vec![s],
            StopField::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, ToSchema)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
    /// vLLM's: with `include_usage`, every chunk carries its choice's usage so far.
    #[serde(default)]
    pub continuous_usage_stats: Option<bool>,
}

/// vLLM's `repetition_detection` (its `RepetitionDetectionParams`; unset sizes are 0).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RepetitionDetectionField {
    #[serde(default)]
    pub max_pattern_size: usize,
    #[serde(default)]
    pub min_pattern_size: usize,
    #[serde(default)]
    pub min_count: usize,
}

/// The sampling and stopping fields both endpoints share, read from the top level of either
/// body (`#[serde(flatten)]`), once.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, ToSchema)]
pub struct CommonFields {
    pub model: Option<String>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<i64>,
    pub min_p: Option<f32>,
    pub seed: Option<i64>,
    pub stop: Option<StopField>,
    pub stop_token_ids: Option<Vec<u32>>,
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    pub repetition_penalty: Option<f32>,
    pub n: Option<u32>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub ignore_eos: Option<bool>,
    pub min_tokens: Option<u32>,
    pub skip_special_tokens: Option<bool>,
    /// vLLM's: the stop string or stop token that ended the output stays in its text.
    pub include_stop_str_in_output: Option<bool>,
    pub user: Option<String>,
    pub cache_salt: Option<String>,
    pub logit_bias: Option<Value>,
    /// vLLM's (with `logprobs`): the alternatives returned are these tokens' (label scoring).
    pub logprob_token_ids: Option<Vec<u32>>,
    /// vLLM's: end early when the output ends in a repeated n-gram.
    pub repetition_detection: Option<RepetitionDetectionField>,
    /// vLLM's: only these tokens may be sampled.
    pub allowed_token_ids: Option<Vec<u32>>,
    /// vLLM's: words the output never contains (see `bad_words`).
    pub bad_words: Option<Vec<String>>,
    /// vLLM's structured outputs (`json`, `regex`, `choice`, `grammar`, `json_object`).
    pub structured_outputs: Option<Value>,
    /// vLLM's older spellings of `structured_outputs`.
    pub guided_json: Option<Value>,
    pub guided_regex: Option<Value>,
    pub guided_choice: Option<Value>,
    pub guided_grammar: Option<Value>,
    /// vLLM's: the log-probability of each prompt token, with this many alternatives.
    pub prompt_logprobs: Option<i64>,
    /// vLLM's: the prompt's and each choice's token ids beside the text.
    pub return_token_ids: Option<bool>,
    /// vLLM's: log-probabilities name tokens as `token_id:{id}` instead of their text.
    pub return_tokens_as_token_ids: Option<bool>,
    /// vLLM's: keep only the prompt's last N tokens (-1: the model's length).
    pub truncate_prompt_tokens: Option<i64>,
    /// vLLM's: streamed deltas of this many tokens (at least the server's `--stream-interval`).
    pub stream_interval: Option<i64>,
    /// vLLM's: `"left"` (the default) keeps the prompt's last tokens, `"right"` its first.
    pub truncation_side: Option<String>,
    /// vLLM's fields this server refuses (see `unsupported_fields`).
    #[serde(flatten)]
    #[schema(ignore)]
    pub unsupported: UnsupportedFields,
}

/// `POST /v1/chat/completions`: the messages, and everything else the request says.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
pub struct ChatCompletionRequest {
    /// OpenAI's messages: `role` and `content` (a string or text parts), with `name`,
    /// `tool_calls` and `tool_call_id` where the role has them.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<ChatMessage>,
    #[serde(flatten)]
    pub options: ChatOptions,
}

/// A chat request's fields besides its messages: also what a Responses API request passes to
/// the chat request it runs as.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, ToSchema)]
pub struct ChatOptions {
    pub max_completion_tokens: Option<u64>,
    pub logprobs: Option<bool>,
    pub top_logprobs: Option<u32>,
    pub tools: Option<Value>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub functions: Option<Value>,
    pub function_call: Option<Value>,
    pub response_format: Option<Value>,
    pub add_generation_prompt: Option<bool>,
    /// vLLM's: the prompt ends inside the final message, which the model continues.
    pub continue_final_message: Option<bool>,
    /// vLLM's: extra variables for the chat template (e.g. `{"enable_thinking": false}`).
    pub chat_template_kwargs: Option<Value>,
    /// vLLM's: the output starts with the final message's text when that message is the
    /// assistant's (the one a `continue_final_message` request continues).
    pub echo: Option<bool>,
    /// OpenAI's, passed to the template as vLLM does (see `template_variables`).
    pub reasoning_effort: Option<Value>,
    /// vLLM's: documents for templates that render them (RAG).
    pub documents: Option<Value>,
    /// vLLM's: special tokens (BOS) added on top of the template's (default `false`).
    pub add_special_tokens: Option<bool>,
    /// vLLM's: a thinking section closes after this many tokens (`-1`: no limit).
    pub thinking_token_budget: Option<i64>,
    /// vLLM's: `false` leaves the reasoning parser's thinking out of the reply.
    pub include_reasoning: Option<bool>,
    /// OpenAI's Predicted Outputs (see `prediction`).
    pub prediction: Option<PredictionField>,
    #[serde(flatten)]
    pub fields: CommonFields,
}

impl ChatOptions {
    /// The shared fields; `max_completion_tokens` wins over the older `max_tokens`.
    pub fn common(&self) -> CommonFields {
        CommonFields {
            max_tokens: self.max_completion_tokens.or(self.fields.max_tokens),
            ..self.fields.clone()
        }
    }
}

/// `prompt` of `/v1/completions`: text, texts, token ids, or lists of token ids.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
#[serde(untagged)]
pub enum PromptInput {
    Text(String),
    Texts(Vec<String>),
    TokenIds(Vec<u32>),
    TokenIdLists(Vec<Vec<u32>>),
}

/// `POST /v1/completions`.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
pub struct CompletionRequest {
    pub prompt: PromptInput,
    pub best_of: Option<u32>,
    pub logprobs: Option<u32>,
    pub echo: Option<bool>,
    pub suffix: Option<String>,
    /// OpenAI's chat `response_format`, which vLLM also takes on completions.
    pub response_format: Option<Value>,
    #[serde(flatten)]
    pub fields: CommonFields,
}

/// OpenAI's default `max_tokens` for `/v1/completions`.
pub const COMPLETIONS_DEFAULT_MAX_TOKENS: u64 = 16;

impl CompletionRequest {
    /// The shared fields, `max_tokens` defaulting to OpenAI's 16.
    pub fn common(&self) -> CommonFields {
        CommonFields {
            max_tokens: Some(
                self.fields
                    .max_tokens
                    .unwrap_or(COMPLETIONS_DEFAULT_MAX_TOKENS),
            ),
            ..self.fields.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::request::parse::parse_body;

    #[test]
    fn chat_request_parses_text_and_part_messages_ignoring_unknown_fields() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"},
            {"role":"user","content":[{"type":"text","text":"there"}]}],
            "stop":"x","max_completion_tokens":5,"max_tokens":9,"whatever":{"a":1}}"#;
        let request: ChatCompletionRequest = parse_body(body).expect("parses");
        assert_eq!(request.messages.len(), 2);
        let common = request.options.common();
        assert_eq!(common.max_tokens, Some(5));
        assert_eq!(
            common.stop.map(StopField::into_vec),
            Some(vec!["x".to_string()])
        );
    }

    #[test]
    fn prompt_forms_are_all_accepted() {
        let forms = [
            (r#""hi""#, "Text"),
            (r#"["a","b"]"#, "Texts"),
            ("[1,2,3]", "TokenIds"),
            ("[[1],[2,3]]", "TokenIdLists"),
        ];
        for (prompt, kind) in forms {
            let body = format!(r#"{{"prompt":{prompt}}}"#);
            let request: CompletionRequest = parse_body(body.as_bytes()).expect("parses");
            let got = match request.prompt {
                PromptInput::Text(_) => "Text",
                PromptInput::Texts(_) => "Texts",
                PromptInput::TokenIds(_) => "TokenIds",
                PromptInput::TokenIdLists(_) => "TokenIdLists",
            };
            assert_eq!(got, kind);
            assert_eq!(request.common().max_tokens, Some(16));
        }
    }
}
