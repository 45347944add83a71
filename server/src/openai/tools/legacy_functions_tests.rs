use serde_json::json;

use super::*;
use crate::openai::request::parse::parse_body;
use crate::openai::wire::chat::{ChatChunkDelta, ChatMessage as WireMessage};
use crate::openai::wire::tool_calls::ArgumentsDelta;

fn request(body: Value) -> ChatCompletionRequest {
    parse_body(&serde_json::to_vec(&body).expect("JSON")).expect("a chat request")
}

#[test]
fn functions_and_function_call_read_as_tools_and_tool_choice() {
    let weather = json!({"name": "get_weather", "parameters": {"type": "object"}});
    let mut named = request(json!({
        "messages": [{"role": "user", "content": "hi"}],
        "functions": [weather],
        "function_call": {"name": "get_weather"},
    }));
    assert!(read_legacy_functions(&mut named).expect("valid"));
    assert_eq!(
        named.options.tools,
        Some(json!([{"type": "function", "function": weather}]))
    );
    assert_eq!(
        named.options.tool_choice,
        Some(json!({"type": "function", "function": {"name": "get_weather"}}))
    );
    assert_eq!(named.options.parallel_tool_calls, Some(false));
    assert!(named.options.functions.is_none() && named.options.function_call.is_none());

    for (mode, expected) in [(json!("auto"), Some(json!("auto"))), (json!(null), None)] {
        let mut body = request(json!({
            "messages": [{"role": "user", "content": "hi"}],
            "functions": [weather], "function_call": mode,
        }));
        assert!(read_legacy_functions(&mut body).expect("valid"));
        assert_eq!(body.options.tool_choice, expected);
    }
    let mut modern = request(json!({"messages": [{"role": "user", "content": "hi"}],
                                    "tools": [{"type": "function", "function": weather}]}));
    assert!(!read_legacy_functions(&mut modern).expect("valid"));
    assert!(modern.options.parallel_tool_calls.is_none());
}

#[test]
fn a_legacy_conversation_reads_as_tool_calls_and_results() {
    let mut body = request(json!({
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null,
             "function_call": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"role": "function", "name": "get_weather", "content": "sunny"},
        ],
        "functions": [{"name": "get_weather"}],
    }));
    assert!(read_legacy_functions(&mut body).expect("valid"));
    let call = &body.messages[1];
    let calls = call.tool_calls.as_ref().expect("a tool call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.name, "get_weather");
    assert_eq!(calls[0].function.arguments, "{\"city\":\"Paris\"}");
    assert!(call.function_call.is_none());
    let result = &body.messages[2];
    assert_eq!(result.role, "tool");
    assert_eq!(result.tool_call_id.as_deref(), Some(calls[0].id.as_str()));
    assert_eq!(result.name.as_deref(), Some("get_weather"));
}

/// A `function` result with no call before it still answers a call id (its own), so the tool
/// message it becomes passes the chat checks.
#[test]
fn a_function_result_without_a_call_gets_its_own_call_id() {
    let mut body = request(json!({
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "function", "name": "get_weather", "content": "sunny"},
        ],
        "functions": [{"name": "get_weather"}],
    }));
    assert!(read_legacy_functions(&mut body).expect("valid"));
    let result = &body.messages[1];
    assert_eq!(result.role, "tool");
    assert_eq!(result.tool_call_id.as_deref(), Some("call_1"));
}

#[test]
fn calls_are_answered_as_function_call() {
    let call = ToolCall::function("call_1".into(), "get_weather", "{\"city\":\"Paris\"}");
    let message = ChatChoice {
        index: 0,
        message: WireMessage {
            role: "assistant".into(),
            content: None,
            tool_calls: Some(vec![call]),
            reasoning_content: None,
            function_call: None,
        },
        logprobs: None,
        finish_reason: "tool_calls".into(),
        stop_reason: None,
        token_ids: None,
    };
    let message = json_of(&legacy_choice(message));
    assert_eq!(message["finish_reason"], "function_call");
    assert_eq!(
        message["message"],
        json!({"role": "assistant", "content": null, "function_call":
                {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}})
    );
    // Streamed: the first delta names the function, later ones carry argument text.
    let first = ToolCallDelta::opening(0, ToolCall::function("call_1".into(), "get_weather", ""));
    let first = json_of(&legacy_chunk_choice(chunk_choice(first)));
    assert_eq!(
        first["delta"],
        json!({"function_call": {"name": "get_weather", "arguments": ""}})
    );
    let later = ToolCallDelta::Arguments {
        index: 0,
        function: ArgumentsDelta {
            arguments: "{\"ci".into(),
        },
    };
    let later = json_of(&legacy_chunk_choice(chunk_choice(later)));
    assert_eq!(
        later["delta"],
        json!({"function_call": {"arguments": "{\"ci"}})
    );
    // Text answers are left as they are.
    let text = ChatChoice {
        index: 0,
        message: WireMessage {
            role: "assistant".into(),
            content: Some("Hello".into()),
            tool_calls: None,
            reasoning_content: None,
            function_call: None,
        },
        logprobs: None,
        finish_reason: "stop".into(),
        stop_reason: None,
        token_ids: None,
    };
    assert_eq!(json_of(&legacy_choice(text.clone())), json_of(&text));
}

fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

fn chunk_choice(piece: ToolCallDelta) -> ChatChunkChoice {
    let delta = ChatChunkDelta {
        tool_calls: Some(vec![piece]),
        ..ChatChunkDelta::default()
    };
    ChatChunkChoice::new(0, delta)
}
