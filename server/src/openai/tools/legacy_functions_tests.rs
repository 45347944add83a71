use serde_json::json;

use super::*;
use crate::openai::request::body::parse_body;

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
        named.tools,
        Some(json!([{"type": "function", "function": weather}]))
    );
    assert_eq!(
        named.tool_choice,
        Some(json!({"type": "function", "function": {"name": "get_weather"}}))
    );
    assert_eq!(named.parallel_tool_calls, Some(false));
    assert!(named.functions.is_none() && named.function_call.is_none());

    for (mode, expected) in [(json!("auto"), Some(json!("auto"))), (json!(null), None)] {
        let mut body = request(json!({
            "messages": [{"role": "user", "content": "hi"}],
            "functions": [weather], "function_call": mode,
        }));
        assert!(read_legacy_functions(&mut body).expect("valid"));
        assert_eq!(body.tool_choice, expected);
    }
    let mut modern = request(json!({"messages": [{"role": "user", "content": "hi"}],
                                    "tools": [{"type": "function", "function": weather}]}));
    assert!(!read_legacy_functions(&mut modern).expect("valid"));
    assert!(modern.parallel_tool_calls.is_none());
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

#[test]
fn calls_are_answered_as_function_call() {
    let mut message = json!({"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}});
    to_legacy_choice(&mut message);
    assert_eq!(
        message,
        json!({"index": 0, "finish_reason": "function_call",
            "message": {"role": "assistant", "content": null, "function_call":
                {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}})
    );
    // Streamed: the first delta names the function, later ones carry argument text.
    let mut first = json!({"index": 0, "finish_reason": null, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": ""}}]}});
    to_legacy_choice(&mut first);
    assert_eq!(
        first["delta"],
        json!({"function_call": {"name": "get_weather", "arguments": ""}})
    );
    let mut later = json!({"index": 0, "finish_reason": null,
        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}});
    to_legacy_choice(&mut later);
    assert_eq!(
        later["delta"],
        json!({"function_call": {"arguments": "{\"ci"}})
    );
    // Text answers are left as they are.
    let mut text = json!({"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Hello"}});
    let before = text.clone();
    to_legacy_choice(&mut text);
    assert_eq!(text, before);
}
