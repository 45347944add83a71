//! [`StructuredOutput`]: what a run asks of every request besides its prompt and sampling, to
//! measure the cost of constrained decoding or tool calling: a JSON schema, JSON mode, or a
//! `tools` array. It only adds fields to the request body ([`StructuredOutput::body_fields`]);
//! reading tool-call deltas back is the stream parser's job.
//!
//! The fields per endpoint and [`SchemaField`]:
//! - `response_format` (OpenAI): `{"type": "json_schema", "json_schema": {"name", "schema",
//!   "strict": true}}`; chat's default; vLLM and SGLang also take it on completions.
//! - `structured_outputs` (vLLM ≥ 0.10.2): `{"json": schema}`; completions' default.
//! - `guided_json` (older vLLM, SGLang's completions): the schema itself.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::endpoint::Endpoint;

/// The body field that carries a JSON schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaField {
    /// OpenAI's `response_format: {"type": "json_schema", …}`.
    ResponseFormat,
    /// vLLM's `structured_outputs: {"json": schema}`.
    StructuredOutputs,
    /// Older vLLM's `guided_json: schema`.
    GuidedJson,
}

impl SchemaField {
    /// The field an endpoint gets unless told otherwise: OpenAI's on chat, vLLM's on completions
    /// (OpenAI's completions API has no structured outputs).
    pub fn default_for(endpoint: Endpoint) -> Self {
        match endpoint {
            Endpoint::Chat => SchemaField::ResponseFormat,
            Endpoint::Completions => SchemaField::StructuredOutputs,
        }
    }
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    Auto,
    Required,
    None,
    /// `{"type": "function", "function": {"name": …}}`: this function must be called.
    Function(String),
}

impl ToolChoice {
    /// `auto`, `required` and `none` are the modes; any other word names a function.
    pub fn parse(text: &str) -> Self {
        match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Function(name.to_string()),
        }
    }

    /// The body's `tool_choice` value.
    pub fn to_json(&self) -> Value {
        match self {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Function(name) => json!({"type": "function", "function": {"name": name}}),
        }
    }
}

/// What every request of a run sends to constrain or structure its output.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StructuredOutput {
    /// Free text (no extra fields).
    #[default]
    Unconstrained,
    /// Output constrained to a JSON schema. `name` is `response_format`'s schema name.
    JsonSchema {
        name: String,
        schema: Value,
        field: SchemaField,
    },
    /// `response_format: {"type": "json_object"}` (chat only).
    JsonObject,
    /// An OpenAI `tools` array and `tool_choice` (chat only).
    Tools { tools: Value, choice: ToolChoice },
}

impl StructuredOutput {
    /// The top-level fields to add to a request body. The caller checks the endpoint:
    /// `JsonObject` and `Tools` are chat fields, sent as they are whatever the endpoint.
    pub fn body_fields(&self) -> Map<String, Value> {
        let fields = match self {
            StructuredOutput::Unconstrained => json!({}),
            StructuredOutput::JsonSchema {
                name,
                schema,
                field,
            } => schema_fields(name, schema, *field),
            StructuredOutput::JsonObject => json!({"response_format": {"type": "json_object"}}),
            StructuredOutput::Tools { tools, choice } => {
                json!({"tools": tools, "tool_choice": choice.to_json()})
            }
        };
        match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

fn schema_fields(name: &str, schema: &Value, field: SchemaField) -> Value {
    match field {
        SchemaField::ResponseFormat => json!({
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": true},
            }
        }),
        SchemaField::StructuredOutputs => json!({"structured_outputs": {"json": schema}}),
        SchemaField::GuidedJson => json!({"guided_json": schema}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}}})
    }

    fn with_field(field: SchemaField) -> Value {
        let output = StructuredOutput::JsonSchema {
            name: "person".into(),
            schema: schema(),
            field,
        };
        Value::Object(output.body_fields())
    }

    #[test]
    fn each_schema_field_has_its_servers_shape() {
        assert_eq!(
            with_field(SchemaField::ResponseFormat),
            json!({"response_format": {
                "type": "json_schema",
                "json_schema": {"name": "person", "schema": schema(), "strict": true},
            }})
        );
        assert_eq!(
            with_field(SchemaField::StructuredOutputs),
            json!({"structured_outputs": {"json": schema()}})
        );
        assert_eq!(
            with_field(SchemaField::GuidedJson),
            json!({"guided_json": schema()})
        );
    }

    #[test]
    fn chat_defaults_to_openai_and_completions_to_vllm() {
        assert_eq!(
            SchemaField::default_for(Endpoint::Chat),
            SchemaField::ResponseFormat
        );
        assert_eq!(
            SchemaField::default_for(Endpoint::Completions),
            SchemaField::StructuredOutputs
        );
    }

    #[test]
    fn json_object_and_unconstrained() {
        assert_eq!(
            Value::Object(StructuredOutput::JsonObject.body_fields()),
            json!({"response_format": {"type": "json_object"}})
        );
        assert!(StructuredOutput::Unconstrained.body_fields().is_empty());
    }

    #[test]
    fn tool_choices() {
        let tools = json!([{"type": "function", "function": {"name": "f"}}]);
        let fields = |choice: &str| {
            let output = StructuredOutput::Tools {
                tools: tools.clone(),
                choice: ToolChoice::parse(choice),
            };
            Value::Object(output.body_fields())
        };
        for mode in ["auto", "required", "none"] {
            assert_eq!(fields(mode), json!({"tools": tools, "tool_choice": mode}));
        }
        assert_eq!(
            fields("get_weather")["tool_choice"],
            json!({"type": "function", "function": {"name": "get_weather"}})
        );
    }
}
