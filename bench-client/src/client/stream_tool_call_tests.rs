//! Tool-call responses: streamed `delta.tool_calls` chunks and whole JSON responses with
//! `message.tool_calls` count as output arrivals and generated text.

use super::*;

/// A streamed tool call as vLLM and OpenAI send it, one event per read.
const TOOL_CALL_EVENTS: [&str; 7] = [
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_abc","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":11,"total_tokens":131}}"#,
    "[DONE]",
];

/// Feeds event k as read k, arriving at time k; the last flow.
fn feed_events(parser: &mut StreamParser, events: &[&str]) -> Flow {
    let mut flow = Flow::Continue;
    for (k, event) in events.iter().enumerate() {
        flow = parser.push(format!("data: {event}\n\n").as_bytes(), k as f64);
    }
    flow
}

#[test]
fn streamed_tool_call_chunks_are_output_arrivals() {
    let mut parser = StreamParser::new(true);
    assert_eq!(feed_events(&mut parser, &TOOL_CALL_EVENTS), Flow::Done);
    let result = parser.into_result();
    // The role chunk and the finish chunk carry nothing; the name and the two argument
    // fragments arrive at reads 1, 2 and 3.
    assert_eq!(result.chunk_times_s, [1.0, 2.0, 3.0]);
    assert_eq!(
        result.text.as_deref(),
        Some("get_weather{\"city\": \"Paris\"}")
    );
    assert_eq!(
        result.output_tokens(None),
        (11, TokenCountSource::ServerUsage)
    );
}

#[test]
fn without_usage_tool_call_text_is_counted_by_the_tokenizer() {
    let events: Vec<&str> = TOOL_CALL_EVENTS
        .iter()
        .copied()
        .filter(|event| !event.contains("\"usage\":{"))
        .collect();
    let mut parser = StreamParser::new(true);
    assert_eq!(feed_events(&mut parser, &events), Flow::Done);
    let result = parser.into_result();
    let characters = |text: &str| text.chars().count();
    assert_eq!(
        result.output_tokens(Some(&characters)),
        (28, TokenCountSource::Tokenizer)
    );
}

#[test]
fn a_tool_call_with_its_arguments_in_the_first_delta_counts_once() {
    let event = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"d","function":{"name":"g","arguments":"{}"}}]}}]}"#;
    let mut parser = StreamParser::new(true);
    assert_eq!(feed_events(&mut parser, &[event, "[DONE]"]), Flow::Done);
    let result = parser.into_result();
    assert_eq!(result.chunk_times_s, [0.0]);
    assert_eq!(result.text.as_deref(), Some("f{}g{}"));
}

#[test]
fn a_whole_tool_call_response_arrives_at_once() {
    let body = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"create_event","arguments":"{\"title\": \"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":9,"total_tokens":59}}"#;
    let mut parser = StreamParser::new(true);
    assert_eq!(parser.whole_response(body, 2.5), Flow::Done);
    assert_eq!(parser.push(b"data: [DONE]\n\n", 3.0), Flow::Done);
    let result = parser.into_result();
    assert_eq!(result.chunk_times_s, [2.5]);
    assert_eq!(
        result.text.as_deref(),
        Some("create_event{\"title\": \"x\"}")
    );
    assert_eq!(
        result.output_tokens(None),
        (9, TokenCountSource::ServerUsage)
    );
}

#[test]
fn whole_bodies_that_are_errors_or_no_response_fail() {
    let mut parser = StreamParser::new(false);
    assert_eq!(
        parser.whole_response(r#"{"error":{"message":"bad schema"}}"#, 1.0),
        Flow::Failed("error response: bad schema".into())
    );
    let mut parser = StreamParser::new(false);
    assert!(matches!(
        parser.whole_response(r#"{"status":"ok"}"#, 1.0),
        Flow::Failed(message) if message.starts_with("the server answered JSON, not a stream")
    ));
}
