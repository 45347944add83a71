//! Tool calls as chat writes them: whole in a message, streamed as `delta.tool_calls` pieces
//! the official SDKs assemble, and the deprecated `function_call` shape.

use serde::Serialize;
use utoipa::ToSchema;

/// A call as a whole message carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    pub function: FunctionCall,
}

/// The function a call names and its arguments (JSON text, as the model wrote it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

/// One piece of a streamed call: its opening (id, type, name and empty arguments) or more of
/// its arguments; `index` is the call's place among the choice's calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ToolCallDelta {
    Opening {
        id: String,
        #[serde(rename = "type")]
        #[schema(value_type = String)]
        kind: &'static str,
        function: FunctionCall,
        index: usize,
    },
    Arguments {
        index: usize,
        function: ArgumentsDelta,
    },
}

/// More of a streamed call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ArgumentsDelta {
    pub arguments: String,
}

/// The deprecated `function_call`: the first call's name and arguments, as far as a delta has
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LegacyFunctionCall {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

impl ToolCall {
    /// A function call with a new id.
    pub fn function(id: String, name: &str, arguments: &str) -> Self {
        Self {
            id,
            kind: "function",
            function: FunctionCall {
                name: name.to_string(),
                arguments: arguments.to_string(),
            },
        }
    }

    /// The call in the deprecated shape.
    pub fn legacy(&self) -> LegacyFunctionCall {
        LegacyFunctionCall {
            name: Some(self.function.name.clone()),
            arguments: Some(self.function.arguments.clone()),
        }
    }
}

impl ToolCallDelta {
    /// A streamed call's opening piece: the call, with empty arguments.
    pub fn opening(index: usize, call: ToolCall) -> Self {
        ToolCallDelta::Opening {
            id: call.id,
            kind: call.kind,
            function: call.function,
            index,
        }
    }

    pub fn index(&self) -> usize {
        match self {
            ToolCallDelta::Opening { index, .. } | ToolCallDelta::Arguments { index, .. } => *index,
        }
    }

    /// Appends arguments text to this piece.
    pub fn push_arguments(&mut self, fragment: &str) {
        match self {
            ToolCallDelta::Opening { function, .. } => function.arguments.push_str(fragment),
            ToolCallDelta::Arguments { function, .. } => function.arguments.push_str(fragment),
        }
    }

    /// The piece in the deprecated shape.
    pub fn legacy(&self) -> LegacyFunctionCall {
        match self {
            ToolCallDelta::Opening { function, .. } => LegacyFunctionCall {
                name: Some(function.name.clone()),
                arguments: Some(function.arguments.clone()),
            },
            ToolCallDelta::Arguments { function, .. } => LegacyFunctionCall {
                name: None,
                arguments: Some(function.arguments.clone()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_their_pieces_write_openais_keys_in_todays_order() {
        let call = ToolCall::function("call_1".into(), "get", "{\"a\":1}");
        assert_eq!(
            serde_json::to_string(&call).expect("serializes"),
            r#"{"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\":1}"}}"#
        );
        let mut opening = ToolCallDelta::opening(2, ToolCall::function("call_2".into(), "f", ""));
        opening.push_arguments("{}");
        assert_eq!(
            serde_json::to_string(&opening).expect("serializes"),
            r#"{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"},"index":2}"#
        );
        let more = ToolCallDelta::Arguments {
            index: 0,
            function: ArgumentsDelta {
                arguments: "x".into(),
            },
        };
        assert_eq!(
            serde_json::to_string(&more).expect("serializes"),
            r#"{"index":0,"function":{"arguments":"x"}}"#
        );
        assert_eq!(
            serde_json::to_string(&more.legacy()).expect("serializes"),
            r#"{"arguments":"x"}"#
        );
    }
}
