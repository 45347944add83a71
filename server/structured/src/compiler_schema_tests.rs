//! Schemas as real users send them, compiled by llguidance after `schema_normalize` and
//! `closed_objects`: walks of the compiled grammar stay valid for the schema.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::tests::{allows_after, compile, compiler, random_walk};
use super::*;
use crate::spec::strict_schema;

fn walks(schema: Value, num_walks: u64) -> Vec<Value> {
    let compiler = compiler(CompileLimits::default());
    let compiled = compile(&compiler, &OutputSpec::JsonSchema(schema.clone()))
        .unwrap_or_else(|e| panic!("{schema} is refused: {e}"));
    (0..num_walks)
        .map(|seed| {
            let text = random_walk(compiled.constraint.as_ref(), seed);
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
        })
        .collect()
}

#[test]
fn int64_bounds_compile_and_hold() {
    // OpenAPI's int64 bounds: llguidance negated i64::MIN (a stack overflow in release builds).
    let schema = json!({"type": "integer", "format": "int64",
        "minimum": -9_223_372_036_854_775_808i64, "maximum": 9_223_372_036_854_775_807i64});
    for value in walks(schema, 4) {
        assert!(value.is_i64(), "{value}");
    }
    // An upper bound there cannot be read without breaking the schema: refused, not a crash.
    let pinned = json!({"type": "integer", "minimum": -9_223_372_036_854_775_808i64,
        "maximum": -9_223_372_036_854_775_808i64});
    let compiler = compiler(CompileLimits::default());
    let error = compile(&compiler, &OutputSpec::JsonSchema(pinned)).unwrap_err();
    assert!(error.to_string().contains("maximum"), "{error}");
}

#[test]
fn unknown_formats_and_draft4_exclusives_are_read_as_json_schema_means_them() {
    let schema = json!({"type": "object", "properties": {
        "secret": {"type": "string", "format": "password", "maxLength": 8},
        "share": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1}},
        "required": ["secret", "share"]});
    for value in walks(schema, 6) {
        assert!(value["secret"].as_str().unwrap().chars().count() <= 8);
        let share = value["share"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0, "{value}");
    }
}

#[test]
fn an_all_of_part_reached_through_a_ref_stays_open() {
    // OpenAPI's inheritance: a base object by reference, then the subtype's own properties.
    let schema = json!({"$defs": {"base": {"type": "object",
            "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99}},
            "required": ["id"]}},
        "allOf": [{"$ref": "#/$defs/base"},
            {"properties": {"name": {"type": "string", "maxLength": 6}}, "required": ["name"]}]});
    let compiler = compiler(CompileLimits::default());
    // Both parts' required keys, in either part's terms: the base's `id` alone does not end it,
    // with the subtype's `name` it may end.
    assert!(!allows_after(&compiler, schema.clone(), r#"{"id": 5"#, "}"));
    assert!(allows_after(
        &compiler,
        schema,
        r#"{"id": 5, "name": "ab""#,
        "}"
    ));
}

#[test]
fn a_long_chain_of_rules_compiles_without_overflowing_the_stack() {
    // 700 GBNF rules, each naming the next: it overflowed a 2 MiB compile thread (the process
    // aborted). Run on this test thread, whose stack is as small.
    let rules: Vec<String> = (0..700)
        .map(|i| format!("r{i} ::= \"x\" r{}", i + 1))
        .collect();
    let grammar = format!("root ::= r0\n{}\nr700 ::= \"y\"", rules.join("\n"));
    let compiler = compiler(CompileLimits::default());
    let compiled = compile(&compiler, &OutputSpec::Grammar(grammar)).unwrap();
    let text = random_walk(compiled.constraint.as_ref(), 1);
    assert!(text.starts_with("xxx"), "{text}");
}

#[test]
fn one_of_is_read_as_any_of_overlapping_or_not() {
    // Overlapping branches (llguidance alone refuses them) and a discriminated union.
    let number = json!({"type": "object", "properties": {"n": {"oneOf": [
            {"type": "number", "minimum": 0, "maximum": 9}, {"type": "integer", "minimum": 0, "maximum": 9}]},
        "d": {"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "maxLength": 3}]}},
        "required": ["n", "d"]});
    for value in walks(number, 8) {
        let n = value["n"].as_f64().unwrap();
        assert!((0.0..=9.0).contains(&n), "{value}");
        let d = value["d"].as_str().unwrap();
        let is_date = d.len() == 10 && d.as_bytes()[4] == b'-' && d.as_bytes()[7] == b'-';
        assert!(is_date || d.chars().count() <= 3, "{value}");
    }
    let union = json!({"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
            "required": ["kind", "x"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "boolean"}},
            "required": ["kind", "y"]}]});
    // serde_json reads `-0` and integers past i64 as floats: whole numbers all the same.
    let is_whole = |x: &Value| x.as_f64().is_some_and(|x| x.fract() == 0.0);
    for value in walks(union, 8) {
        match value["kind"].as_str() {
            Some("a") => assert!(is_whole(&value["x"]) && value.get("y").is_none(), "{value}"),
            Some("b") => assert!(
                value["y"].is_boolean() && value.get("x").is_none(),
                "{value}"
            ),
            _ => panic!("{value}"),
        }
    }
}

#[test]
fn keywords_llguidance_cannot_enforce_are_ignored_unless_the_schema_is_strict() {
    // vLLM serves these schemas (its `auto` backend falls back until one takes them).
    let schema = json!({"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3,
            "uniqueItems": true},
        "code": {"type": "string", "maxLength": 4, "not": {"const": "x"}},
        "n": {"oneOf": [{"type": "number", "minimum": 0, "maximum": 9},
            {"type": "integer", "minimum": 0, "maximum": 9}]}},
        "required": ["tags", "code", "n"], "if": {"required": ["code"]}, "then": {}});
    // What is enforceable still is: types, lengths, counts, required keys.
    for value in walks(schema.clone(), 6) {
        let tags = value["tags"].as_array().unwrap();
        assert!(tags.len() <= 3, "{value}");
        assert!(tags
            .iter()
            .all(|t| t.as_str().unwrap().chars().count() <= 4));
        assert!(value["code"].as_str().unwrap().chars().count() <= 4);
        assert!(value["n"].is_number());
    }
    let compiler = compiler(CompileLimits::default());
    let strict = OutputSpec::JsonSchema(strict_schema(schema));
    match compile(&compiler, &strict) {
        Err(StructuredError::Invalid(message)) => {
            assert!(message.contains("Unimplemented keys"), "{message}")
        }
        other => panic!("a strict schema with unenforceable keywords must be refused: {other:?}"),
    }
    // Strict or not, a malformed schema is refused.
    for spec in [
        OutputSpec::JsonSchema(json!({"type": "strng"})),
        OutputSpec::JsonSchema(strict_schema(json!({"type": "strng"}))),
    ] {
        assert!(compile(&compiler, &spec).is_err(), "{spec:?}");
    }
}
