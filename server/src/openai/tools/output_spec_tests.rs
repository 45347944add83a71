use serde_json::json;

use super::*;
use crate::openai::request::body::ChatCompletionRequest;
use crate::openai::request::parse::parse_body;

fn spec_of(body: Value) -> Result<Option<RequestedSpec>, ApiError> {
    let request: ChatCompletionRequest = parse_body(body.to_string().as_bytes())?;
    requested_spec(
        &request.options.fields,
        request.options.response_format.as_ref(),
    )
}

fn body(extra: Value) -> Value {
    let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
    for (key, value) in extra.as_object().expect("object") {
        body[key] = value.clone();
    }
    body
}

#[test]
fn every_spelling_gives_its_spec_and_field() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let cases = [
        (
            json!({"response_format": {"type": "json_schema",
                "json_schema": {"name": "x", "schema": schema, "strict": true}}}),
            OutputSpec::JsonSchema(strict_schema(schema.clone())),
            "response_format.json_schema.schema",
        ),
        (
            json!({"response_format": {"type": "json_schema",
                "json_schema": {"name": "x", "schema": schema, "strict": false}}}),
            OutputSpec::JsonSchema(schema.clone()),
            "response_format.json_schema.schema",
        ),
        (
            json!({"response_format": {"type": "json_object"}}),
            OutputSpec::JsonObject,
            "response_format",
        ),
        (
            json!({"structured_outputs": {"json": schema.to_string()}}),
            OutputSpec::JsonSchema(schema.clone()),
            "structured_outputs.json",
        ),
        (
            json!({"structured_outputs": {"regex": "[a-z]+", "disable_any_whitespace": true}}),
            OutputSpec::Regex("[a-z]+".into()),
            "structured_outputs.regex",
        ),
        (
            json!({"structured_outputs": {"choice": ["a", "b"]}}),
            OutputSpec::Choice(vec!["a".into(), "b".into()]),
            "structured_outputs.choice",
        ),
        (
            json!({"structured_outputs": {"grammar": "start: \"x\""}}),
            OutputSpec::Grammar("start: \"x\"".into()),
            "structured_outputs.grammar",
        ),
        (
            json!({"guided_json": schema}),
            OutputSpec::JsonSchema(schema.clone()),
            "guided_json",
        ),
        (
            json!({"guided_regex": "x+"}),
            OutputSpec::Regex("x+".into()),
            "guided_regex",
        ),
        (
            json!({"guided_choice": ["yes", "no"]}),
            OutputSpec::Choice(vec!["yes".into(), "no".into()]),
            "guided_choice",
        ),
        (
            json!({"guided_grammar": "start: \"y\""}),
            OutputSpec::Grammar("start: \"y\"".into()),
            "guided_grammar",
        ),
    ];
    for (extra, spec, field) in cases {
        let got = spec_of(body(extra.clone()))
            .expect("valid")
            .expect("a spec");
        assert_eq!(got.spec, spec, "{extra}");
        assert_eq!(got.field, field, "{extra}");
    }
    for none in [
        json!({}),
        json!({"response_format": {"type": "text"}}),
        json!({"response_format": null}),
        json!({"structured_outputs": null}),
    ] {
        assert_eq!(spec_of(body(none.clone())).expect("valid"), None, "{none}");
    }
}

#[test]
fn bad_fields_are_400s_naming_the_field() {
    let cases = [
        // vLLM: "You must use one kind of structured outputs constraint".
        (json!({"structured_outputs": {}}), "structured_outputs"),
        (
            json!({"structured_outputs": {"disable_any_whitespace": true}}),
            "structured_outputs",
        ),
        (
            json!({"response_format": {"type": "yaml"}}),
            "response_format.type",
        ),
        (
            json!({"response_format": {"kind": "json"}}),
            "response_format.type",
        ),
        (
            json!({"response_format": {"type": "json_schema"}}),
            "response_format.json_schema.schema",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"schema": [1]}}}),
            "response_format.json_schema.schema",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": 3, "schema": {}}}}),
            "response_format.json_schema.name",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}),
            "response_format.json_schema.name",
        ),
        (
            json!({"structured_outputs": {"json": "{not json"}}),
            "structured_outputs.json",
        ),
        (
            json!({"structured_outputs": {"regex": ""}}),
            "structured_outputs.regex",
        ),
        (
            json!({"structured_outputs": {"choice": []}}),
            "structured_outputs.choice",
        ),
        (
            json!({"structured_outputs": {"choice": [1]}}),
            "structured_outputs.choice",
        ),
        (
            json!({"structured_outputs": {"regex": "a", "choice": ["b"]}}),
            "structured_outputs",
        ),
        (
            json!({"structured_outputs": {"structural_tag": {}}}),
            "structured_outputs.structural_tag",
        ),
        (json!({"structured_outputs": "json"}), "structured_outputs"),
        (
            json!({"guided_regex": "a", "response_format": {"type": "json_object"}}),
            "guided_regex",
        ),
        (json!({"guided_choice": "a"}), "guided_choice"),
        (json!({"guided_regex": ""}), "guided_regex"),
        (json!({"guided_grammar": 3}), "guided_grammar"),
    ];
    for (extra, field) in cases {
        let error = spec_of(body(extra.clone())).expect_err("refused");
        assert_eq!(
            error.param.as_deref(),
            Some(field),
            "{extra}: {}",
            error.message
        );
        assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST, "{extra}");
    }
}
