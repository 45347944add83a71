//! A request's `model` over HTTP, against a one-request server on 127.0.0.1: the spec's own
//! (a LoRA adapter) when it names one, else the run's; the body sends it, the record keeps it.

use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::timeout;

use crate::client::test_http::read_request;
use crate::client::{Client, Endpoint, RequestConfig, RunClock};
use crate::record::RequestRecord;
use crate::workload::{Prompt, RequestSpec};

const BOUND: Duration = Duration::from_secs(10);

const STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"text\":\"hi\",\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1,\"total_tokens\":3}}\n\n",
    "data: [DONE]\n\n",
);

/// Answers one request with [`STREAM`]; the request's body, once read.
async fn serve_once() -> (String, oneshot::Receiver<Vec<u8>>) {
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
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
            STREAM.len()
        );
        let _ = stream.write_all(format!("{head}{STREAM}").as_bytes()).await;
        let _ = stream.flush().await;
    }));
    (base_url, received)
}

/// Sends one request naming `model` (`None`: the run's, `base`); the record and the body sent.
async fn send_naming(model: Option<&str>) -> (RequestRecord, Value) {
    let (base_url, received) = serve_once().await;
    let mut config = RequestConfig::new(Endpoint::Completions, &base_url, "base");
    config.timeout = BOUND;
    let client = Client::new(config).expect("a client");
    let spec = RequestSpec {
        prompt: Prompt::Text("hello".into()),
        input_tokens: 1,
        output_tokens: 1,
        conversation: None,
        model: model.map(String::from),
    };
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
async fn a_request_naming_an_adapter_sends_and_records_it() {
    let (record, body) = send_naming(Some("sql-lora")).await;
    assert_eq!(record.error_message, None);
    assert_eq!(body["model"], "sql-lora");
    assert_eq!(record.model.as_deref(), Some("sql-lora"));
}

#[tokio::test]
async fn a_request_naming_no_adapter_sends_and_records_the_runs_model() {
    let (record, body) = send_naming(None).await;
    assert_eq!(record.error_message, None);
    assert_eq!(body["model"], "base");
    assert_eq!(record.model.as_deref(), Some("base"));
}
