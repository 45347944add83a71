use serde_json::json;

use super::*;
use crate::tool_call_config::ToolCallConfig;

fn weather() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}})
}

fn add() -> Value {
    json!({"type": "function", "function": {"name": "add",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}})
}

fn parse(tools: Value, choice: Option<Value>) -> Result<Option<ToolsRequest>, ApiError> {
    parse_tools(Some(&tools), choice.as_ref(), None)
}

#[test]
fn choices_default_to_auto_with_tools_and_forced_ones_have_a_schema() {
    let both = json!([weather(), add()]);
    let auto = parse(both.clone(), None).expect("valid").expect("tools");
    assert_eq!(auto.choice, ToolChoice::Auto);
    assert!(auto.forced_spec().is_none() && auto.offered().is_some());
    assert!(auto.parallel_tool_calls);
    let required = parse(both.clone(), Some(json!("required")))
        .expect("valid")
        .expect("tools");
    let OutputSpec::JsonSchema(schema) = required.forced_spec().expect("forced").spec else {
        panic!("a schema");
    };
    assert_eq!(schema["items"]["anyOf"].as_array().map(Vec::len), Some(2));
    let named = parse(
        both.clone(),
        Some(json!({"type": "function", "function": {"name": "add"}})),
    )
    .expect("valid")
    .expect("tools");
    assert_eq!(named.choice, ToolChoice::Named("add".into()));
    let OutputSpec::JsonSchema(schema) = named.forced_spec().expect("forced").spec else {
        panic!("a schema");
    };
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    let none = parse(both, Some(json!("none")))
        .expect("valid")
        .expect("tools");
    assert!(none.offered().is_none() && none.forced_spec().is_none());
    assert_eq!(parse_tools(None, None, None).expect("valid"), None);
    assert_eq!(
        parse_tools(None, Some(&json!("none")), None).expect("valid"),
        None
    );
}

#[test]
fn output_reading_follows_the_choice_and_the_server_flags() {
    let tools = |choice: Value| {
        parse(json!([weather()]), Some(choice))
            .expect("valid")
            .expect("tools")
    };
    let hermes = ToolCallConfig {
        parser: Some(ToolCallFormat::Hermes),
        enable_auto_tool_choice: true,
    };
    assert_eq!(
        tools(json!("auto")).output(hermes).expect("enabled"),
        Some(ToolOutput::Parsed {
            format: ToolCallFormat::Hermes,
            parallel: true
        })
    );
    let error = tools(json!("auto"))
        .output(ToolCallConfig::default())
        .expect_err("auto needs the flags");
    assert_eq!(error.param.as_deref(), Some("tool_choice"));
    assert!(error.message.contains("--enable-auto-tool-choice"));
    assert_eq!(
        tools(json!("required")).output(ToolCallConfig::default()),
        Ok(Some(ToolOutput::Parsed {
            format: ToolCallFormat::JsonArray,
            parallel: true
        }))
    );
    assert_eq!(tools(json!("none")).output(hermes), Ok(None));
}

#[test]
fn no_tools_with_auto_or_none_is_a_request_without_tools() {
    for choice in [
        None,
        Some(json!("auto")),
        Some(json!("none")),
        Some(Value::Null),
    ] {
        let parsed = parse(json!([]), choice.clone()).expect("accepted");
        assert!(parsed.is_none(), "{choice:?}");
    }
    assert!(parse(json!([weather()]), Some(json!("auto")))
        .expect("accepted")
        .is_some());
}

#[test]
fn bad_tools_and_choices_name_the_field() {
    let cases = [
        (json!({"a": 1}), None, "tools"),
        (json!([{"type": "code_interpreter"}]), None, "tools[0].type"),
        (json!([{"type": "function"}]), None, "tools[0].function"),
        (
            json!([{"type": "function", "function": {"name": "has space"}}]),
            None,
            "tools[0].function.name",
        ),
        (
            json!([weather(), {"type": "function", "function": {"name": "add", "parameters": "x"}}]),
            None,
            "tools[1].function.parameters",
        ),
        (
            json!([weather(), weather()]),
            None,
            "tools[1].function.name",
        ),
        (
            json!([weather()]),
            Some(json!({"type": "function", "function": {"name": "nope"}})),
            "tool_choice",
        ),
        (json!([weather()]), Some(json!("sometimes")), "tool_choice"),
        (
            json!([{"type": "function", "function": {"name": "f", "strict": "yes"}}]),
            None,
            "tools[0].function.strict",
        ),
        (
            json!([weather()]),
            Some(json!({"type": "function"})),
            "tool_choice",
        ),
        (json!([]), Some(json!("required")), "tool_choice"),
        (
            json!([]),
            Some(json!({"type": "function", "function": {"name": "add"}})),
            "tool_choice",
        ),
    ];
    for (tools, choice, field) in cases {
        let error = parse(tools.clone(), choice.clone()).expect_err("refused");
        assert_eq!(
            error.param.as_deref(),
            Some(field),
            "{tools} {choice:?}: {}",
            error.message
        );
    }
}

#[test]
fn strictness_is_each_function_s_own() {
    let mut strict_weather = weather();
    strict_weather["function"]["strict"] = json!(true);
    let mut strict_add = add();
    strict_add["function"]["strict"] = json!(true);
    let is_strict = |spec: &RequestedSpec| match &spec.spec {
        OutputSpec::JsonSchema(schema) => schema.get("x-guidance").is_some(),
        other => panic!("{other:?}"),
    };
    let tools = json!([add(), strict_weather.clone()]);
    let named = |name: &str| {
        parse(
            tools.clone(),
            Some(json!({"type": "function", "function": {"name": name}})),
        )
        .expect("valid")
        .expect("tools")
    };
    assert!(is_strict(
        &named("get_weather").forced_spec().expect("forced")
    ));
    assert!(!is_strict(&named("add").forced_spec().expect("forced")));
    // One strict function of two: the grammar of both stays lenient (for the other's sake),
    // and the strict one is checked on its own, strict, under its own field.
    let mixed = parse(tools.clone(), Some(json!("required")))
        .expect("valid")
        .expect("tools");
    assert!(!is_strict(&mixed.forced_spec().expect("forced")));
    let checks = mixed.validation_specs();
    let described: Vec<(String, bool)> = checks
        .iter()
        .map(|spec| (spec.field.clone(), is_strict(spec)))
        .collect();
    assert_eq!(
        described,
        [
            ("tools".to_string(), false),
            ("tools[1].function.parameters".to_string(), true)
        ]
    );
    // Every function strict: one strict grammar.
    let all = parse(json!([strict_add, strict_weather]), Some(json!("required")))
        .expect("valid")
        .expect("tools");
    assert!(is_strict(&all.forced_spec().expect("forced")));
    let checks = all.validation_specs();
    assert_eq!(checks.len(), 1);
    assert!(is_strict(&checks[0]));
    let lenient = parse(json!([weather(), add()]), Some(json!("required")))
        .expect("valid")
        .expect("tools");
    let checks = lenient.validation_specs();
    assert_eq!(checks.len(), 1);
    assert!(!is_strict(&checks[0]));
}
