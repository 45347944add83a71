//! The JSON schemas that force a tool call, as vLLM builds them: with a named function the output
//! is that function's arguments object; with `tool_choice: "required"` it is a JSON array of
//! `{"name": ..., "arguments": ...}` calls, each to one of the tools with arguments that validate
//! against its parameters (at most one call unless parallel calls are allowed).

use serde_json::{json, Value};

/// A function the model may call: its name and its parameters' JSON schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFunction {
    pub name: String,
    pub parameters: Value,
}

/// The parameters schema, or "any object" when the function declared none.
fn parameters_schema(function: &ToolFunction) -> Value {
    match &function.parameters {
        Value::Null => json!({"type": "object"}),
        schema => schema.clone(),
    }
}

/// The schema of a call to `function`: its arguments object.
pub fn named_call_schema(function: &ToolFunction) -> Value {
    parameters_schema(function)
}

/// The schema of one or more calls (`[{"name", "arguments"}, ...]`) to any of `functions`.
pub fn required_calls_schema(functions: &[ToolFunction], parallel_tool_calls: bool) -> Value {
    let calls: Vec<Value> = functions
        .iter()
        .map(|function| {
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [function.name]},
                    "arguments": parameters_schema(function),
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let mut schema = json!({
        "type": "array",
        "minItems": 1,
        "items": {"anyOf": calls},
    });
    if !parallel_tool_calls {
        schema["maxItems"] = json!(1);
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> ToolFunction {
        ToolFunction {
            name: "get_weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }
    }

    #[test]
    fn named_calls_are_the_arguments_and_missing_parameters_take_any_object() {
        assert_eq!(named_call_schema(&weather()), weather().parameters);
        let bare = ToolFunction {
            name: "ping".into(),
            parameters: Value::Null,
        };
        assert_eq!(named_call_schema(&bare), json!({"type": "object"}));
    }

    #[test]
    fn required_calls_are_an_array_of_calls_to_known_functions() {
        let schema = required_calls_schema(&[weather()], false);
        assert_eq!(schema["maxItems"], 1);
        assert_eq!(schema["minItems"], 1);
        let call = &schema["items"]["anyOf"][0];
        assert_eq!(call["properties"]["name"]["enum"][0], "get_weather");
        assert_eq!(call["properties"]["arguments"], weather().parameters);
        assert!(required_calls_schema(&[weather()], true)
            .get("maxItems")
            .is_none());
    }
}
