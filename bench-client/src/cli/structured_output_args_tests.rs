//! The structured-output flags: clap's exclusions, the checks of their files, and the request
//! bodies each option produces per backend.

use clap::Parser;
use serde_json::{json, Value};

use super::*;
use crate::cli::backend::resolve_endpoint;
use crate::cli::serve_args::{EndpointArg, ServeArgs};
use crate::client::{Client, RequestConfig};
use crate::workload::RequestSpec;

#[derive(Debug, Parser)]
struct Command {
    #[command(flatten)]
    serve: ServeArgs,
}

fn parse(flags: &[&str]) -> Result<ServeArgs, clap::Error> {
    Command::try_parse_from(std::iter::once("serve").chain(flags.iter().copied())).map(|c| c.serve)
}

/// A file in a fresh directory holding `text`; the directory lives as long as the guard.
fn file(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("writes");
    (dir, path.display().to_string())
}

const SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"}}}"#;
const TOOLS: &str = r#"[{"type":"function","function":{"name":"get_weather",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]"#;

/// What `flags` make every request send: the body of one request, or the start-up error.
fn body(flags: &[&str]) -> anyhow::Result<Value> {
    let args = parse(flags)?;
    let endpoint = match resolve_endpoint(args.backend.as_deref(), args.endpoint)? {
        EndpointArg::Chat => Endpoint::Chat,
        EndpointArg::Completions => Endpoint::Completions,
    };
    let mut config = RequestConfig::new(endpoint, "http://127.0.0.1:1", "m");
    config.structured_output = args.structured_output.load(endpoint)?;
    let spec = RequestSpec::text("hi", 1, 4);
    Ok(serde_json::from_slice(&Client::new(config)?.body(&spec))?)
}

fn error(flags: &[&str]) -> String {
    format!("{:#}", body(flags).expect_err("refused"))
}

#[test]
fn json_schema_on_chat_is_openais_response_format() {
    let (_dir, path) = file("person.json", SCHEMA);
    let sent = body(&["--backend", "openai-chat", "--json-schema", &path]).expect("a body");
    assert_eq!(
        sent["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "person",
            "schema": serde_json::from_str::<Value>(SCHEMA).expect("JSON"),
            "strict": true,
        }})
    );
    assert!(sent["messages"].is_array() && sent.get("structured_outputs").is_none());
}

#[test]
fn json_schema_on_completions_is_vllms_structured_outputs_or_the_field_asked_for() {
    let (_dir, path) = file("s.json", SCHEMA);
    let schema: Value = serde_json::from_str(SCHEMA).expect("JSON");
    for backend in ["openai", "vllm"] {
        let sent = body(&["--backend", backend, "--json-schema", &path]).expect("a body");
        assert_eq!(sent["structured_outputs"], json!({"json": schema}));
        assert!(sent["prompt"].is_string() && sent.get("response_format").is_none());
    }
    let field = ["--structured-output-field", "guided_json"];
    let sent = body(&[&["--backend", "vllm", "--json-schema", &path], &field[..]].concat());
    assert_eq!(sent.expect("a body")["guided_json"], schema);
    let field = ["--structured-output-field", "response_format"];
    let sent = body(&[&["--backend", "openai", "--json-schema", &path], &field[..]].concat());
    assert_eq!(
        sent.expect("a body")["response_format"]["type"],
        "json_schema"
    );
}

#[test]
fn json_object_is_chat_only() {
    let sent = body(&["--json-object"]).expect("a body");
    assert_eq!(sent["response_format"], json!({"type": "json_object"}));
    let refused = error(&["--backend", "vllm", "--json-object"]);
    assert!(
        refused.contains("--json-object") && refused.contains("chat"),
        "{refused}"
    );
}

#[test]
fn tools_go_with_their_choice_on_chat_only() {
    let (_dir, path) = file("tools.json", TOOLS);
    let sent = body(&["--tools", &path]).expect("a body");
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(sent["tool_choice"], "auto");
    let sent = body(&["--tools", &path, "--tool-choice", "required"]).expect("a body");
    assert_eq!(sent["tool_choice"], "required");
    let sent = body(&["--tools", &path, "--tool-choice", "get_weather"]).expect("a body");
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    let unknown = error(&["--tools", &path, "--tool-choice", "get_time"]);
    assert!(
        unknown.contains("get_time") && unknown.contains(&path),
        "{unknown}"
    );
    let refused = error(&["--backend", "openai", "--tools", &path]);
    assert!(
        refused.contains("--tools") && refused.contains("chat"),
        "{refused}"
    );
}

#[test]
fn extra_body_still_wins_over_the_structured_fields() {
    let args = parse(&["--json-object"]).expect("parses");
    let mut config = RequestConfig::new(Endpoint::Chat, "http://127.0.0.1:1", "m");
    config.structured_output = args.structured_output.load(Endpoint::Chat).expect("loads");
    config
        .sampling
        .extra_body
        .insert("response_format".into(), json!({"type": "text"}));
    let spec = RequestSpec::text("hi", 1, 4);
    let client = Client::new(config).expect("a client");
    let sent: Value = serde_json::from_slice(&client.body(&spec)).expect("JSON");
    assert_eq!(sent["response_format"], json!({"type": "text"}));
}

#[test]
fn clap_refuses_mixed_or_orphan_flags() {
    for flags in [
        &["--json-schema", "s.json", "--tools", "t.json"][..],
        &["--json-schema", "s.json", "--json-object"],
        &["--json-object", "--tools", "t.json"],
        &["--tool-choice", "auto"],
        &["--structured-output-field", "guided_json"],
    ] {
        assert!(parse(flags).is_err(), "{flags:?} accepted");
    }
    assert!(parse(&["--json-schema", "s.json", "--structured-output-field", "x"]).is_err());
}

#[test]
fn unreadable_or_invalid_files_are_named() {
    let missing = error(&["--json-schema", "/no/such/schema.json"]);
    assert!(missing.contains("/no/such/schema.json") && missing.contains("cannot read"));
    let (_dir, path) = file("broken.json", "{\"type\": ");
    let invalid = error(&["--json-schema", &path]);
    assert!(
        invalid.contains(&path) && invalid.contains("not valid JSON"),
        "{invalid}"
    );
    let (_dir, path) = file("list.json", "[1, 2]");
    let not_object = error(&["--json-schema", &path]);
    assert!(
        not_object.contains(&path) && not_object.contains("an array"),
        "{not_object}"
    );
    let missing_tools = error(&["--tools", "/no/such/tools.json"]);
    assert!(
        missing_tools.contains("/no/such/tools.json"),
        "{missing_tools}"
    );
}

#[test]
fn tools_must_be_a_non_empty_array_of_named_functions() {
    for (text, expected) in [
        ("[]", "an empty array"),
        (r#"{"type":"function"}"#, "an object"),
        (r#"[{"type":"function","function":{}}]"#, "tool 0"),
        (r#"[{"type":"retrieval"}]"#, "tool 0"),
        (
            r#"[{"type":"function","function":{"name":"f"}}, 3]"#,
            "tool 1",
        ),
    ] {
        let (_dir, path) = file("tools.json", text);
        let refused = error(&["--tools", &path]);
        assert!(
            refused.contains(&path) && refused.contains(expected),
            "{text}: {refused}"
        );
    }
}

#[test]
fn schema_names_are_the_stem_in_openais_characters() {
    assert_eq!(
        schema_name(Path::new("a/json-schema-10-fields.json")),
        "json-schema-10-fields"
    );
    assert_eq!(schema_name(Path::new("my schema.v2.json")), "my_schema_v2");
    assert_eq!(schema_name(Path::new("")), "bench");
    assert_eq!(schema_name(Path::new(&"x".repeat(100))).len(), 64);
}

#[test]
fn the_result_records_the_mode_file_and_choice() {
    let (_dir, path) = file("tools.json", TOOLS);
    let args = parse(&["--tools", &path, "--tool-choice", "required"]).expect("parses");
    let flags = &args.structured_output;
    let meta = flags
        .meta(&flags.load(Endpoint::Chat).expect("loads"))
        .expect("a mode");
    assert_eq!(meta.mode, "tools");
    assert_eq!(meta.file.as_deref(), Some(path.as_str()));
    assert_eq!(meta.tool_choice.as_deref(), Some("required"));
    let plain = parse(&[]).expect("parses").structured_output;
    assert_eq!(
        plain.meta(&plain.load(Endpoint::Chat).expect("loads")),
        None
    );
    let (_dir, path) = file("s.json", SCHEMA);
    let args = parse(&["--backend", "vllm", "--json-schema", &path]).expect("parses");
    let flags = &args.structured_output;
    let meta = flags.meta(&flags.load(Endpoint::Completions).expect("loads"));
    assert_eq!(
        meta.and_then(|m| m.field).as_deref(),
        Some("structured_outputs")
    );
}

#[test]
fn the_shipped_workload_files_load() {
    let workloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/workloads");
    let schema = workloads.join("json-schema-10-fields.json");
    let flags = StructuredOutputArgs {
        json_schema: Some(schema),
        ..StructuredOutputArgs::default()
    };
    let StructuredOutput::JsonSchema { name, schema, .. } =
        flags.load(Endpoint::Chat).expect("the schema loads")
    else {
        panic!("not a schema");
    };
    assert_eq!(name, "json-schema-10-fields");
    assert_eq!(schema["required"].as_array().map(Vec::len), Some(10));
    assert_eq!(schema["additionalProperties"], false);
    let flags = StructuredOutputArgs {
        tools: Some(workloads.join("tools-weather-calendar.json")),
        tool_choice: Some("create_event".into()),
        ..StructuredOutputArgs::default()
    };
    let StructuredOutput::Tools { tools, .. } = flags.load(Endpoint::Chat).expect("tools load")
    else {
        panic!("not tools");
    };
    assert_eq!(
        function_names(&tools).collect::<Vec<_>>(),
        ["get_weather", "create_event"]
    );
}

#[test]
fn structured_runs_let_the_model_stop_at_eos_unless_told_otherwise() {
    let ignore_eos = |flags: &[&str]| parse(flags).expect("parses").ignore_eos();
    assert!(ignore_eos(&[]));
    assert!(!ignore_eos(&["--json-object"]));
    assert!(!ignore_eos(&["--tools", "t.json"]));
    assert!(!ignore_eos(&["--json-schema", "s.json"]));
    assert!(ignore_eos(&["--json-schema", "s.json", "--ignore-eos"]));
}
