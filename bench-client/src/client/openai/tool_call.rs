//! `tool_calls`, as a streamed chat delta carries them (`choices[i].delta.tool_calls`) and as a
//! whole response's message does (`choices[i].message.tool_calls`): the same shape, every field
//! optional. A streamed call arrives in pieces: its first delta has the `id` and the function's
//! `name` (often with empty `arguments`), the next ones fragments of `arguments`. The name and
//! the arguments are generated text; the id is the server's.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One entry of `tool_calls`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ToolCall {
    /// Which call of the message a delta continues.
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionCall>,
}

/// A tool call's `function`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub name: Option<String>,
    /// A JSON text (or a fragment of one) in OpenAI's API; some servers send an object
    /// instead, which is kept as its JSON text.
    #[serde(default, deserialize_with = "text_or_json")]
    pub arguments: Option<String>,
}

impl ToolCall {
    /// The generated pieces of this call: the function's name and its arguments (either may
    /// be absent or empty).
    pub fn generated_pieces(&self) -> impl Iterator<Item = &str> {
        let function = self.function.as_ref();
        [
            function.and_then(|f| f.name.as_deref()),
            function.and_then(|f| f.arguments.as_deref()),
        ]
        .into_iter()
        .flatten()
    }
}

/// A string as it is; `null` as `None`; any other JSON value as its text.
fn text_or_json<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(other) => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(json: &str) -> ToolCall {
        serde_json::from_str(json).expect("a tool call")
    }

    #[test]
    fn first_delta_has_the_name_later_ones_argument_fragments() {
        let first = call(
            r#"{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}"#,
        );
        assert_eq!(first.id.as_deref(), Some("call_1"));
        assert_eq!(
            first.generated_pieces().collect::<Vec<_>>(),
            ["get_weather", ""]
        );
        let fragment = call(r#"{"index":0,"function":{"arguments":"{\"city\": \"Par"}}"#);
        assert_eq!(
            fragment.generated_pieces().collect::<Vec<_>>(),
            ["{\"city\": \"Par"]
        );
    }

    #[test]
    fn object_arguments_are_kept_as_json_text() {
        let whole = call(r#"{"function":{"name":"f","arguments":{"city":"Paris"}}}"#);
        let function = whole.function.expect("a function");
        assert_eq!(function.arguments.as_deref(), Some(r#"{"city":"Paris"}"#));
        let absent = call(r#"{"function":{"name":"f","arguments":null}}"#);
        assert_eq!(absent.function.and_then(|f| f.arguments), None);
    }
}
