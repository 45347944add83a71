//! A Responses API request (`POST /v1/responses`) → the chat request it runs as: `input` items
//! become chat messages (after `instructions` and a stored conversation; [`super::input`]),
//! function tools and `tool_choice` take chat's shape, `text.format` becomes `response_format`,
//! and every other chat field the request carries (vLLM's `top_k`, `seed`, …) is read as chat
//! reads it.

use pagoda_text::template::ChatMessage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::openai::error::ApiError;
use crate::openai::request::body::{
    ChatCompletionRequest, ChatOptions, CommonFields, StreamOptions,
};
use crate::openai::responses::input::input_messages;
use crate::openai::tools::request::{chat_function_tool, chat_named_tool_choice};

/// `POST /v1/responses`, as OpenAI and vLLM take it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ResponsesRequest {
    pub model: Option<String>,
    pub input: Value,
    pub instructions: Option<String>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub text: Option<Value>,
    pub max_output_tokens: Option<u64>,
    /// Kept as the client wrote it (the response echoes it; chat reads it as its `f32`).
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_logprobs: Option<u32>,
    pub stream: Option<bool>,
    pub store: Option<bool>,
    pub previous_response_id: Option<String>,
    pub metadata: Option<Value>,
    pub user: Option<String>,
    pub reasoning: Option<Value>,
    pub truncation: Option<String>,
    pub include: Option<Vec<String>>,
    pub background: Option<bool>,
    pub service_tier: Option<Value>,
    /// OpenAI's fields that run nothing here: refused by name when set.
    pub conversation: Option<Value>,
    pub prompt: Option<Value>,
    pub max_tool_calls: Option<Value>,
    /// Chat's fields that the Responses API does not spell its own way: vLLM's sampling
    /// extras (`top_k`, `min_p`, `seed`, …), `chat_template_kwargs`, and the like. Those with
    /// Responses spellings (`max_output_tokens`, `text.format`, …) are read from those only.
    #[serde(flatten)]
    pub chat: ChatOptions,
}

impl ResponsesRequest {
    /// Whether the output's log-probabilities were asked for (`top_logprobs`, or `include`
    /// naming `message.output_text.logprobs`).
    pub fn wants_logprobs(&self) -> bool {
        let included = self.include.iter().flatten();
        self.top_logprobs.is_some_and(|n| n > 0)
            || included
                .into_iter()
                .any(|i| i == "message.output_text.logprobs")
    }

    /// Whether it is generated in the background (always as a stream, whose events are kept).
    pub fn is_background(&self) -> bool {
        self.background == Some(true)
    }

    /// The conversation this request continues: `history` (a stored response's), then `input`.
    pub fn conversation(&self, history: &[ChatMessage]) -> Result<Vec<ChatMessage>, ApiError> {
        let mut messages = history.to_vec();
        messages.extend(input_messages(&self.input)?);
        Ok(messages)
    }

    /// Refuses what cannot run: an unstored background response, OpenAI's fields this server
    /// does not run, an unknown `truncation`.
    fn check_runnable(&self) -> Result<(), ApiError> {
        if self.is_background() && self.store == Some(false) {
            return Err(ApiError::invalid(
                "background",
                "`background` responses must be stored: `store` cannot be false",
            ));
        }
        let not_run = [
            ("conversation", &self.conversation),
            ("prompt", &self.prompt),
            ("max_tool_calls", &self.max_tool_calls),
        ];
        for (field, value) in not_run {
            if value.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(ApiError::unsupported(field, &format!("`{field}`")));
            }
        }
        match self.truncation.as_deref() {
            None | Some("disabled" | "auto") => Ok(()),
            Some(_) => Err(ApiError::invalid(
                "truncation",
                "`truncation` must be `auto` or `disabled`",
            )),
        }
    }

    /// The chat request this request runs as: `instructions`, then `conversation`.
    pub fn chat_request(
        &self,
        conversation: &[ChatMessage],
    ) -> Result<ChatCompletionRequest, ApiError> {
        self.check_runnable()?;
        let instructions = self.instructions.iter();
        let system = instructions.map(|text| ChatMessage::new("system", text.clone()));
        let messages = system.chain(conversation.iter().cloned()).collect();
        Ok(ChatCompletionRequest {
            messages,
            options: self.chat_options()?,
        })
    }

    /// Chat's options: the Responses spellings, over the chat fields the request carries.
    fn chat_options(&self) -> Result<ChatOptions, ApiError> {
        let wants_logprobs = self.wants_logprobs();
        // `reasoning: {"effort": …}` reaches the template as a chat request's `reasoning_effort`.
        let effort = self.reasoning.as_ref().and_then(|r| r.get("effort"));
        let effort = effort.filter(|effort| !effort.is_null()).cloned();
        // One copy of the chat fields the request carries: the Responses spellings replace some.
        let chat = self.chat.clone();
        Ok(ChatOptions {
            max_completion_tokens: None,
            logprobs: wants_logprobs.then_some(true),
            top_logprobs: wants_logprobs.then(|| self.top_logprobs.unwrap_or(0)),
            tools: self.tools.as_deref().map(chat_tools).transpose()?,
            tool_choice: self
                .tool_choice
                .as_ref()
                .map(chat_tool_choice)
                .transpose()?,
            parallel_tool_calls: self.parallel_tool_calls,
            functions: None,
            response_format: self
                .text
                .as_ref()
                .map(response_format)
                .transpose()?
                .flatten()
                .map(|format| serde_json::to_value(format).expect("a format serializes")),
            echo: None,
            reasoning_effort: effort.or(chat.reasoning_effort),
            fields: self.common_fields(chat.fields),
            ..chat
        })
    }

    /// The shared sampling fields: the request's own, over `carried`, the chat extras it carries.
    fn common_fields(&self, carried: CommonFields) -> CommonFields {
        // A background response is always generated as a stream (its events are kept).
        let stream = self.stream == Some(true) || self.is_background();
        let usage = StreamOptions {
            include_usage: Some(true),
            continuous_usage_stats: None,
        };
        CommonFields {
            model: self.model.clone(),
            max_tokens: self.max_output_tokens,
            temperature: self.temperature.map(|t| t as f32),
            top_p: self.top_p.map(|p| p as f32),
            user: self.user.clone(),
            n: None,
            stream: Some(stream),
            stream_options: stream.then_some(usage),
            ..carried
        }
    }
}

/// Function tools (`{"type": "function", "name", "parameters", …}`) in chat's shape.
fn chat_tools(tools: &[Value]) -> Result<Value, ApiError> {
    let tools = tools.iter().enumerate().map(|(index, tool)| {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "function" {
            return Err(ApiError::unsupported(
                &format!("tools[{index}].type"),
                &format!("tools of type {kind:?} (only `function` tools run here)"),
            ));
        }
        let mut function = Map::new();
        for key in ["name", "description", "parameters", "strict"] {
            if let Some(value) = tool.get(key).filter(|v| !v.is_null()) {
                function.insert(key.into(), value.clone());
            }
        }
        Ok(chat_function_tool(function))
    });
    Ok(Value::Array(tools.collect::<Result<_, ApiError>>()?))
}

/// `tool_choice`: the same words as chat, or `{"type": "function", "name"}`.
fn chat_tool_choice(choice: &Value) -> Result<Value, ApiError> {
    match choice {
        Value::Object(object) if object.get("type").and_then(Value::as_str) == Some("function") => {
            let name = object.get("name").and_then(Value::as_str).ok_or_else(|| {
                ApiError::invalid("tool_choice.name", "`tool_choice.name` must be a string")
            })?;
            Ok(chat_named_tool_choice(name))
        }
        Value::Object(_) => Err(ApiError::unsupported(
            "tool_choice",
            "a `tool_choice` other than none, auto, required or a function",
        )),
        other => Ok(other.clone()),
    }
}

/// Chat's `response_format` for a structured `text.format`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatResponseFormat {
    JsonObject,
    JsonSchema { json_schema: Map<String, Value> },
}

/// `text.format` → chat's `response_format` (`None` for plain text).
fn response_format(text: &Value) -> Result<Option<ChatResponseFormat>, ApiError> {
    let Some(format) = text.get("format").filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(ChatResponseFormat::JsonObject)),
        Some("json_schema") => {
            let mut json_schema = Map::new();
            for key in ["name", "schema", "strict", "description"] {
                if let Some(value) = format.get(key) {
                    json_schema.insert(key.into(), value.clone());
                }
            }
            Ok(Some(ChatResponseFormat::JsonSchema { json_schema }))
        }
        _ => Err(ApiError::invalid(
            "text.format.type",
            "`text.format.type` must be text, json_object or json_schema",
        )),
    }
}

/// A chat error's field in the Responses request's terms.
pub fn responses_param(param: &str) -> String {
    // Message indices shift by the instructions and the stored conversation: name `input`.
    if param.starts_with("messages") {
        return "input".to_string();
    }
    let renamed = [
        ("max_tokens", "max_output_tokens"),
        ("response_format.json_schema", "text.format"),
        ("response_format", "text.format"),
    ];
    for (chat, responses) in renamed {
        if let Some(rest) = param.strip_prefix(chat) {
            return format!("{responses}{rest}");
        }
    }
    match param
        .strip_prefix("tools[")
        .and_then(|r| r.split_once("].function"))
    {
        Some((index, rest)) => format!("tools[{index}]{rest}"),
        None => param.to_string(),
    }
}

#[cfg(test)]
mod tests;
