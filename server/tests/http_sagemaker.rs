//! Amazon SageMaker's container contract (as vLLM serves it) against the real binary on the mock
//! engine with an API key: `/ping` answers like `/health` without the key, and `/invocations`
//! (behind the key) runs a chat, completion or Responses request by the body's shape, streamed
//! or not.

mod common;

use common::api::{client, get, Reply};
use common::server::{sse_data, ServerProcess};
use serde_json::{json, Value};

const KEY: &str = "sm-key";

async fn invoke(server: &ServerProcess, body: &Value, key: Option<&str>) -> Reply {
    let mut request = client().post(server.url("/invocations")).json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    Reply::read(request.send().await.expect("answered")).await
}

#[tokio::test]
async fn ping_and_invocations_serve_every_request_kind() {
    let server = ServerProcess::start(&["--mock", "--api-key", KEY]);
    assert_eq!(
        get(&client(), &server.url("/ping")).await.status.as_u16(),
        200
    );
    let posted = client()
        .post(server.url("/ping"))
        .send()
        .await
        .expect("answered");
    assert_eq!(posted.status().as_u16(), 200);

    let chat = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3});
    assert_eq!(invoke(&server, &chat, None).await.status.as_u16(), 401);
    for (body, object) in [
        (chat.clone(), "chat.completion"),
        (json!({"prompt": "hi", "max_tokens": 3}), "text_completion"),
        (json!({"input": "hi", "max_output_tokens": 3}), "response"),
    ] {
        let reply = invoke(&server, &body, Some(KEY)).await;
        assert_eq!(reply.status.as_u16(), 200, "{body}: {}", reply.text());
        assert_eq!(reply.json()["object"], object, "{}", reply.text());
    }
    let mut streamed = chat.clone();
    streamed["stream"] = json!(true);
    let reply = invoke(&server, &streamed, Some(KEY)).await;
    assert_eq!(
        sse_data(&reply.text()).last().map(String::as_str),
        Some("[DONE]")
    );

    let unclear = invoke(&server, &json!({"max_tokens": 3}), Some(KEY)).await;
    assert_eq!(unclear.status.as_u16(), 400);
    assert_eq!(
        unclear.json()["error"]["param"],
        "messages",
        "{}",
        unclear.text()
    );
}
