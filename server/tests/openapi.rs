//! `GET /openapi.json`: a valid OpenAPI 3.1 document (checked by `openapi-spec-validator` from
//! PyPI, `tests/python/validate_openapi.py`) whose routes are exactly docs/server.md's endpoint
//! table, with bearer security on the protected routes when the server has a key, and behind the
//! key with `--openapi-behind-api-key`; and schemathesis (PyPI), driven by that document, finds
//! no 5xx, no answer that breaks the document and no hang on the mock engine in a bounded run
//! (`scripts/fuzz-openapi.sh`, which also runs against the default model).

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::api::{client, get};
use common::python::{python, repo_root, require_modules};
use common::server::ServerProcess;
use reqwest::StatusCode;
use serde_json::Value;

/// `(METHOD, /path)` of every route docs/server.md's endpoint table lists.
fn documented_routes() -> BTreeSet<(String, String)> {
    let docs = std::fs::read_to_string(repo_root().join("docs/server.md")).expect("docs/server.md");
    let table = docs
        .split("## Endpoints")
        .nth(1)
        .and_then(|rest| rest.split("### Request fields").next())
        .expect("the endpoint table");
    let mut routes = BTreeSet::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let first_cell = line.split('|').nth(1).unwrap_or("");
        for route in first_cell.split('`').skip(1).step_by(2) {
            if let Some((method, path)) = route.split_once(' ') {
                routes.insert((method.to_string(), path.to_string()));
            }
        }
    }
    routes
}

fn served_routes(document: &Value) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in ["get", "post", "delete", "put", "patch"] {
            if item.get(method).is_some() {
                routes.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    routes
}

fn validate_with_openapi_spec_validator(document: &Value) {
    let python = python();
    require_modules(&python, &["openapi_spec_validator"]);
    let path = std::env::temp_dir().join(format!("pagoda-openapi-{}.json", std::process::id()));
    std::fs::write(&path, document.to_string()).expect("write the document");
    let output = Command::new(&python)
        .arg(repo_root().join("tests/python/validate_openapi.py"))
        .arg(&path)
        .output()
        .expect("run the validator");
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "openapi-spec-validator refused the document:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn the_document_is_valid_and_lists_exactly_the_served_routes() {
    let server = ServerProcess::start(&["--mock", "--api-key", "k"]);
    let reply = get(&client(), &server.url("/openapi.json")).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "open without the key: {}",
        reply.text()
    );
    let document = reply.json();
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["version"], env!("CARGO_PKG_VERSION"));
    validate_with_openapi_spec_validator(&document);

    let mut documented = documented_routes();
    // The LoRA routes exist only with --allow-runtime-lora-updating (off here).
    for route in ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"] {
        assert!(
            documented.remove(&("POST".to_string(), route.to_string())),
            "{route}"
        );
    }
    assert_eq!(served_routes(&document), documented);

    let security = |method: &str, path: &str| document["paths"][path][method]["security"].clone();
    assert_eq!(
        security("post", "/v1/chat/completions")[0]["api_key"],
        serde_json::json!([])
    );
    assert_eq!(
        security("get", "/health"),
        Value::Null,
        "open routes need no key"
    );
    let chat_ok = &document["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]["content"];
    assert!(
        chat_ok.get("application/json").is_some() && chat_ok.get("text/event-stream").is_some()
    );
    let error = &document["paths"]["/v1/completions"]["post"]["responses"]["4XX"]["content"];
    assert_eq!(
        error["application/json"]["schema"]["$ref"],
        "#/components/schemas/ErrorBody"
    );
}

#[tokio::test]
async fn the_document_can_sit_behind_the_key() {
    let server = ServerProcess::start(&["--mock", "--api-key", "k", "--openapi-behind-api-key"]);
    let reply = get(&client(), &server.url("/openapi.json")).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.text());
    let with_key = client()
        .get(server.url("/openapi.json"))
        .bearer_auth("k")
        .send()
        .await
        .expect("answered");
    assert_eq!(with_key.status(), StatusCode::OK);
    let document: Value = with_key.json().await.expect("JSON");
    assert_eq!(document["openapi"], "3.1.0");
}

#[test]
fn schemathesis_finds_nothing_wrong_on_the_mock() {
    require_modules(&python(), &["schemathesis"]);
    let server =
        ServerProcess::start(&["--mock", "--api-key", "k", "--mock-output-len", "fixed:4"]);
    let output = Command::new(repo_root().join("scripts/fuzz-openapi.sh"))
        .args([
            &server.url(""),
            "--api-key",
            "k",
            "--max-time",
            "60",
            "--max-examples",
            "10",
        ])
        .env("PAGODA_PYTHON", python())
        .output()
        .expect("run scripts/fuzz-openapi.sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "schemathesis found failures:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("passed"), "{stdout}");
}
