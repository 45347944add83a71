//! Cross-origin requests (vLLM's `--allowed-origins` and friends) against the real binary on the
//! mock engine, with an API key: off by default; when on, a preflight is answered without the
//! key, allowed origins get the headers on answers and on errors, others get none.

mod common;

use common::api::client;
use common::server::ServerProcess;
use reqwest::{Method, StatusCode};
use serde_json::json;

const UI: &str = "https://ui.example";

async fn preflight(server: &ServerProcess, origin: &str) -> reqwest::Response {
    client()
        .request(Method::OPTIONS, server.url("/v1/chat/completions"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .expect("answered")
}

async fn chat(server: &ServerProcess, origin: &str, key: &str) -> reqwest::Response {
    client()
        .post(server.url("/v1/chat/completions"))
        .header("origin", origin)
        .bearer_auth(key)
        .json(&json!({"model": "mock", "max_tokens": 2,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .expect("answered")
}

fn allow_origin(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("access-control-allow-origin")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[tokio::test]
async fn browsers_on_allowed_origins_may_call_and_others_may_not() {
    let closed = ServerProcess::start(&["--mock", "--api-key", "k"]);
    let refused = preflight(&closed, UI).await;
    assert_eq!(refused.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(allow_origin(&refused), None, "off by default");
    assert_eq!(allow_origin(&chat(&closed, UI, "k").await), None);
    drop(closed);

    let open = ServerProcess::start(&[
        "--mock",
        "--api-key",
        "k",
        "--allowed-origins",
        r#"["https://ui.example"]"#,
    ]);
    let answered = preflight(&open, UI).await;
    assert!(answered.status().is_success(), "{:?}", answered.status());
    assert_eq!(allow_origin(&answered).as_deref(), Some(UI));
    let methods = answered.headers()["access-control-allow-methods"]
        .to_str()
        .expect("text")
        .to_string();
    assert!(methods == "*" || methods.contains("POST"), "{methods}");
    let ok = chat(&open, UI, "k").await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(allow_origin(&ok).as_deref(), Some(UI));
    // An error carries the headers too, so the page can read why.
    let unauthorized = chat(&open, UI, "wrong").await;
    assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(allow_origin(&unauthorized).as_deref(), Some(UI));
    // Another origin: answered as before, without the header its browser needs.
    assert_eq!(
        allow_origin(&preflight(&open, "https://evil.example").await),
        None
    );
    assert_eq!(
        allow_origin(&chat(&open, "https://evil.example", "k").await),
        None
    );
    drop(open);

    let credentialed =
        ServerProcess::start(&["--mock", "--allowed-origins", "*", "--allow-credentials"]);
    let mirrored = preflight(&credentialed, UI).await;
    assert_eq!(
        allow_origin(&mirrored).as_deref(),
        Some(UI),
        "`*` with credentials mirrors"
    );
    assert_eq!(
        mirrored.headers()["access-control-allow-credentials"],
        "true"
    );
}
