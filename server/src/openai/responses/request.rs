//! A Responses API request (`POST /v1/responses`) → the chat request it runs as: `input` items
//! become chat messages (after `instructions` and a stored conversation), function tools and
//! `tool_choice` take chat's shape, `text.format` becomes `response_format`.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::openai::error::ApiError;

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
    /// Everything else: vLLM's sampling extras (`top_k`, `min_p`, `seed`, …) go to the chat
    /// request as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Chat fields a Responses request cannot set through its extras (they have Responses
/// spellings, or no meaning here).
const NOT_PASSED: [&str; 9] = [
    "messages",
    "n",
    "stream_options",
    "response_format",
    "max_tokens",
    "max_completion_tokens",
    "logprobs",
    "echo",
    "functions",
];

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

    /// The conversation this request continues: `history` (a stored response's), then `input`.
    pub fn conversation(&self, history: &[Value]) -> Result<Vec<Value>, ApiError> {
        let mut messages = history.to_vec();
        messages.extend(input_messages(&self.input)?);
        Ok(messages)
    }

    /// The chat request body this request runs as: `instructions`, then `conversation`.
    pub fn chat_body(&self, conversation: &[Value]) -> Result<Value, ApiError> {
        let background = self.background == Some(true);
        if background && self.store == Some(false) {
            return Err(ApiError::invalid(
                "background",
                "`background` responses must be stored: `store` cannot be false",
            ));
        }
        for field in ["conversation", "prompt", "max_tool_calls"] {
            if self.extra.get(field).is_some_and(|v| !v.is_null()) {
                return Err(ApiError::unsupported(field, &format!("`{field}`")));
            }
        }
        if let Some(truncation) = self.truncation.as_deref() {
            if truncation != "disabled" && truncation != "auto" {
                return Err(ApiError::invalid(
                    "truncation",
                    "`truncation` must be `auto` or `disabled`",
                ));
            }
        }
        let mut messages = Vec::new();
        if let Some(instructions) = &self.instructions {
            messages.push(json!({"role": "system", "content": instructions}));
        }
        messages.extend(conversation.iter().cloned());
        let mut body: Map<String, Value> = self
            .extra
            .iter()
            .filter(|(key, _)| !NOT_PASSED.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        body.insert("messages".into(), Value::Array(messages));
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                body.insert(key.into(), value);
            }
        };
        put("model", self.model.clone().map(Value::from));
        put("max_tokens", self.max_output_tokens.map(Value::from));
        put("temperature", self.temperature.map(Value::from));
        put("top_p", self.top_p.map(Value::from));
        put("user", self.user.clone().map(Value::from));
        // `reasoning: {"effort": …}` reaches the template as a chat request's `reasoning_effort`.
        put(
            "reasoning_effort",
            self.reasoning
                .as_ref()
                .and_then(|r| r.get("effort"))
                .filter(|effort| !effort.is_null())
                .cloned(),
        );
        put(
            "parallel_tool_calls",
            self.parallel_tool_calls.map(Value::from),
        );
        // A background response is always generated as a stream (its events are kept).
        let stream = self.stream == Some(true) || background;
        put("stream", Some(Value::from(stream)));
        if stream {
            put("stream_options", Some(json!({"include_usage": true})));
        }
        if self.wants_logprobs() {
            put("logprobs", Some(Value::from(true)));
            put(
                "top_logprobs",
                Some(Value::from(self.top_logprobs.unwrap_or(0))),
            );
        }
        if let Some(tools) = &self.tools {
            put("tools", Some(chat_tools(tools)?));
        }
        put(
            "tool_choice",
            self.tool_choice
                .as_ref()
                .map(chat_tool_choice)
                .transpose()?,
        );
        put(
            "response_format",
            self.text
                .as_ref()
                .map(response_format)
                .transpose()?
                .flatten(),
        );
        Ok(Value::Object(body))
    }
}

/// `input`: a string (one user message) or a list of items.
fn input_messages(input: &Value) -> Result<Vec<Value>, ApiError> {
    let items = match input {
        Value::String(text) => return Ok(vec![json!({"role": "user", "content": text})]),
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) => return Err(ApiError::invalid("input", "`input` must not be empty")),
        _ => {
            return Err(ApiError::invalid(
                "input",
                "`input` must be a string or a list of items",
            ))
        }
    };
    let mut messages: Vec<Value> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = format!("input[{index}]");
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => messages.push(message_of(item, &field)?),
            "function_call" => push_call(&mut messages, function_call_of(item, &field)?),
            "function_call_output" => messages.push(json!({
                "role": "tool",
                "tool_call_id": string_field(item, "call_id", &field)?,
                "content": output_text(item.get("output"), &field)?,
            })),
            // A model's reasoning is not part of the next prompt (chat templates drop it too).
            "reasoning" => {}
            other => {
                return Err(ApiError::unsupported(
                    &format!("{field}.type"),
                    &format!("input items of type {other:?}"),
                ))
            }
        }
    }
    if messages.is_empty() {
        return Err(ApiError::invalid(
            "input",
            "`input` holds no message to answer (`reasoning` items alone are dropped)",
        ));
    }
    Ok(messages)
}

fn string_field<'a>(item: &'a Value, name: &str, field: &str) -> Result<&'a str, ApiError> {
    item.get(name).and_then(Value::as_str).ok_or_else(|| {
        ApiError::invalid(
            format!("{field}.{name}"),
            format!("`{field}.{name}` must be a string"),
        )
    })
}

/// A message item: `role` and `content` as text or a list of text parts.
fn message_of(item: &Value, field: &str) -> Result<Value, ApiError> {
    let role = string_field(item, "role", field)?;
    if !["user", "assistant", "system", "developer"].contains(&role) {
        return Err(ApiError::invalid(
            format!("{field}.role"),
            format!(
                "`{field}.role` must be user, assistant, system or developer, got {role:?} (a \
                 tool's result is a `function_call_output` item)"
            ),
        ));
    }
    let content = match item.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            let texts = parts.iter().enumerate().map(|(i, part)| {
                let kind = part.get("type").and_then(Value::as_str);
                match (kind, part.get("text").and_then(Value::as_str)) {
                    (Some("input_text" | "output_text" | "text"), Some(text)) => Ok(text),
                    (Some("refusal"), _) => {
                        Ok(part.get("refusal").and_then(Value::as_str).unwrap_or(""))
                    }
                    _ => Err(ApiError::unsupported(
                        &format!("{field}.content[{i}]"),
                        "content parts other than text (`input_text`, `output_text`)",
                    )),
                }
            });
            texts.collect::<Result<Vec<_>, _>>()?.join("\n")
        }
        _ => {
            return Err(ApiError::invalid(
                format!("{field}.content"),
                format!("`{field}.content` must be a string or a list of parts"),
            ))
        }
    };
    Ok(json!({"role": role, "content": content}))
}

/// A `function_call` item as a chat tool call.
fn function_call_of(item: &Value, field: &str) -> Result<Value, ApiError> {
    Ok(json!({
        "id": string_field(item, "call_id", field)?,
        "type": "function",
        "function": {
            "name": string_field(item, "name", field)?,
            "arguments": string_field(item, "arguments", field)?,
        },
    }))
}

/// Consecutive calls belong to one assistant turn (with the text before them, if any).
fn push_call(messages: &mut Vec<Value>, call: Value) {
    if let Some(last) = messages.last_mut() {
        if last["role"] == "assistant" {
            match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                Some(calls) => calls.push(call),
                None => last["tool_calls"] = json!([call]),
            }
            return;
        }
    }
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call]}));
}

/// A tool result: a string, or a list of text parts.
fn output_text(output: Option<&Value>, field: &str) -> Result<String, ApiError> {
    match output {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let texts = parts.iter().enumerate().map(|(i, part)| {
                part.get("text").and_then(Value::as_str).ok_or_else(|| {
                    ApiError::unsupported(
                        &format!("{field}.output[{i}]"),
                        "tool output parts other than text",
                    )
                })
            });
            Ok(texts.collect::<Result<Vec<_>, _>>()?.join("\n"))
        }
        _ => Err(ApiError::invalid(
            format!("{field}.output"),
            format!("`{field}.output` must be a string"),
        )),
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
        Ok(json!({"type": "function", "function": function}))
    });
    Ok(Value::Array(tools.collect::<Result<_, ApiError>>()?))
}

/// `tool_choice`: the same words as chat, or `{"type": "function", "name"}`.
fn chat_tool_choice(choice: &Value) -> Result<Value, ApiError> {
    match choice {
        Value::Object(object) if object.get("type") == Some(&json!("function")) => {
            let name = object.get("name").and_then(Value::as_str).ok_or_else(|| {
                ApiError::invalid("tool_choice.name", "`tool_choice.name` must be a string")
            })?;
            Ok(json!({"type": "function", "function": {"name": name}}))
        }
        Value::Object(_) => Err(ApiError::unsupported(
            "tool_choice",
            "a `tool_choice` other than none, auto, required or a function",
        )),
        other => Ok(other.clone()),
    }
}

/// `text.format` → chat's `response_format` (`None` for plain text).
fn response_format(text: &Value) -> Result<Option<Value>, ApiError> {
    let Some(format) = text.get("format").filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let mut json_schema = Map::new();
            for key in ["name", "schema", "strict", "description"] {
                if let Some(value) = format.get(key) {
                    json_schema.insert(key.into(), value.clone());
                }
            }
            Ok(Some(
                json!({"type": "json_schema", "json_schema": json_schema}),
            ))
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
