//! The JSON schemas that force a tool call, as vLLM builds them: with a named function the output
//! is that function's arguments object; with `tool_choice: "required"` it is a JSON array of
//! `{"name": ..., "arguments": ...}` calls, each to one of the tools with arguments that validate
//! against its parameters (at most one call unless parallel calls are allowed).

use serde_json::{json, Map, Value};

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
///
/// A parameters schema with references (`$ref`, `$defs`, `definitions`: what pydantic writes for
/// nested models) is not inlined, since its `#/…` pointers name its own root: it moves to
/// `#/$defs/tool_{i}` of the calls schema, its definitions beside it as `tool_{i}.{name}`, and its
/// references are rewritten to match (vLLM gathers the tools' `$defs` likewise).
pub fn required_calls_schema(functions: &[ToolFunction], parallel_tool_calls: bool) -> Value {
    let mut defs = Map::new();
    let calls: Vec<Value> = functions
        .iter()
        .enumerate()
        .map(|(index, function)| {
            let parameters = parameters_schema(function);
            let arguments = match has_references(&parameters) {
                true => relocate(parameters, &format!("tool_{index}"), &mut defs),
                false => parameters,
            };
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [function.name]},
                    "arguments": arguments,
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
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema
}

/// Whether a schema points into itself anywhere (`$ref`) or holds definitions.
fn has_references(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(key, value)| {
            matches!(key.as_str(), "$ref" | "$defs" | "definitions") || has_references(value)
        }),
        Value::Array(items) => items.iter().any(has_references),
        _ => false,
    }
}

/// Puts `schema` at `#/$defs/{key}` (its definitions at `#/$defs/{key}.{name}`) into `defs`;
/// returns the reference to it.
fn relocate(mut schema: Value, key: &str, defs: &mut Map<String, Value>) -> Value {
    rewrite_refs(&mut schema, key);
    if let Value::Object(map) = &mut schema {
        for section in ["$defs", "definitions"] {
            if let Some(Value::Object(own)) = map.remove(section) {
                defs.extend(
                    own.into_iter()
                        .map(|(name, def)| (format!("{key}.{name}"), def)),
                );
            }
        }
    }
    defs.insert(key.to_string(), schema);
    json!({"$ref": format!("#/$defs/{key}")})
}

/// Rewrites every local `$ref` of a schema about to move to `#/$defs/{key}`.
fn rewrite_refs(value: &mut Value, key: &str) {
    match value {
        Value::Object(map) => {
            for (name, item) in map.iter_mut() {
                match (name.as_str(), item) {
                    ("$ref", Value::String(pointer)) => *pointer = moved_pointer(pointer, key),
                    (_, item) => rewrite_refs(item, key),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite_refs(item, key)),
        _ => {}
    }
}

/// Where a local JSON pointer of the moved schema points now; other references stay.
fn moved_pointer(pointer: &str, key: &str) -> String {
    let Some(path) = pointer.strip_prefix('#') else {
        return pointer.to_string();
    };
    for section in ["/$defs/", "/definitions/"] {
        if let Some(rest) = path.strip_prefix(section) {
            return format!("#/$defs/{key}.{rest}");
        }
    }
    format!("#/$defs/{key}{path}")
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

    #[test]
    fn parameters_with_definitions_move_under_the_calls_defs_with_their_references() {
        let booking = ToolFunction {
            name: "book".into(),
            parameters: json!({
                "type": "object",
                "$defs": {"Day": {"type": "string", "format": "date"}},
                "definitions": {"Seat": {"enum": ["aisle", "window"]}},
                "properties": {
                    "from": {"$ref": "#/$defs/Day"},
                    "seat": {"$ref": "#/definitions/Seat"},
                    "again": {"$ref": "#"},
                    "to": {"$ref": "#/properties/from"},
                },
            }),
        };
        let schema = required_calls_schema(&[weather(), booking], true);
        let calls = &schema["items"]["anyOf"];
        assert_eq!(calls[0]["properties"]["arguments"], weather().parameters);
        assert_eq!(
            calls[1]["properties"]["arguments"],
            json!({"$ref": "#/$defs/tool_1"})
        );
        let defs = &schema["$defs"];
        assert_eq!(defs["tool_1.Day"]["format"], "date");
        assert_eq!(defs["tool_1.Seat"]["enum"][1], "window");
        let moved = &defs["tool_1"];
        assert!(moved.get("$defs").is_none() && moved.get("definitions").is_none());
        let refs: Vec<&str> = ["from", "seat", "again", "to"]
            .iter()
            .map(|p| {
                moved["properties"][p]["$ref"]
                    .as_str()
                    .expect("a reference")
            })
            .collect();
        assert_eq!(
            refs,
            [
                "#/$defs/tool_1.Day",
                "#/$defs/tool_1.Seat",
                "#/$defs/tool_1",
                "#/$defs/tool_1/properties/from"
            ]
        );
    }
}
