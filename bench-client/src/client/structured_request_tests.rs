//! A tool-call request over HTTP, against a one-request server on 127.0.0.1: the tools reach
//! the server in the body, and the tool-call answer, streamed or whole, is counted as output.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::timeout;

use crate::client::test_http::read_request;
use crate::client::{Client, Endpoint, RequestConfig, RunClock, StructuredOutput, ToolChoice};
use crate::record::{RequestRecord, TokenCountSource};
use crate::workload::RequestSpec;

const BOUND: Duration = Duration::from_secs(10);

const STREAMED_TOOL_CALL: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\": \\\"Oslo\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":9,\"total_tokens\":39}}\n\n",
    "data: [DONE]\n\n",
);

const WHOLE_TOOL_CALL: &str = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39}}"#;

/// Serves one request with `body` as `content_type`; the request's body, once read.
async fn serve_once(
    content_type: &'static str,
    body: &'static str,
) -> (String, oneshot::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let base_url = format!("http://{}", listener.local_addr().expect("an address"));
    let (sent, received) = oneshot::channel();
    tokio::spawn(timeout(BOUND, async move {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let Some(request_body) = read_request(&mut stream).await else {
            return;
        };
        let _ = sent.send(request_body);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
        let _ = stream.flush().await;
    }));
    (base_url, received)
}

/// Sends one tool-call request to `base_url`; the record and the body the server read.
async fn send_tool_request(
    base_url: &str,
    received: oneshot::Receiver<Vec<u8>>,
) -> (RequestRecord, Value) {
    let mut config = RequestConfig::new(Endpoint::Chat, base_url, "m");
    config.timeout = BOUND;
    config.keep_generated_text = true;
    config.structured_output = StructuredOutput::Tools {
        tools: json!([{"type": "function", "function": {"name": "get_weather"}}]),
        choice: ToolChoice::Required,
    };
    let client = Client::new(config).expect("a client");
    let spec = RequestSpec::text("weather in Oslo?", 4, 32);
    let clock = RunClock {
        start: std::time::Instant::now(),
    };
    let record = timeout(BOUND, client.send(0, &spec, 0.0, clock, None))
        .await
        .expect("the request ends");
    let body = timeout(BOUND, received)
        .await
        .expect("in time")
        .expect("a request body");
    (record, serde_json::from_slice(&body).expect("a JSON body"))
}

#[tokio::test]
async fn tools_are_sent_and_streamed_tool_calls_are_output() {
    let (base_url, received) = serve_once("text/event-stream", STREAMED_TOOL_CALL).await;
    let (record, body) = send_tool_request(&base_url, received).await;
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["stream"], true);
    assert_eq!(record.error_message, None);
    assert_eq!(record.chunk_times_s.len(), 2, "the name and the arguments");
    assert!(record.first_token_s.is_some());
    assert_eq!(record.output_tokens, 9);
    assert_eq!(record.token_count_source, TokenCountSource::ServerUsage);
    assert_eq!(
        record.generated_text.as_deref(),
        Some("get_weather{\"city\": \"Oslo\"}")
    );
}

#[tokio::test]
async fn a_whole_json_tool_call_response_is_output_at_its_end() {
    let (base_url, received) = serve_once("application/json", WHOLE_TOOL_CALL).await;
    let (record, _) = send_tool_request(&base_url, received).await;
    assert_eq!(record.error_message, None);
    assert_eq!(record.chunk_times_s.len(), 1);
    assert_eq!(record.first_token_s, Some(record.end_s));
    assert_eq!(record.output_tokens, 9);
    assert_eq!(
        record.generated_text.as_deref(),
        Some("get_weather{\"city\": \"Oslo\"}")
    );
}
