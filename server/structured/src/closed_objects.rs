//! Objects closed by default: an object schema that lists `properties` and says nothing of other
//! keys gets `additionalProperties: false`, as vLLM's default grammar backend (xgrammar's strict
//! mode) and OpenAI's strict mode read schemas. JSON Schema itself lets such an object take any
//! other key, and a small model given that freedom invents keys until `max_tokens` (seen with
//! the schemas pydantic, LangChain and instructor send, none of which say
//! `additionalProperties`). A schema that wants other keys says so (`additionalProperties`,
//! `patternProperties` or `unevaluatedProperties`) and is left as it is. The parts of an `allOf`
//! stay open, and so does a definition an `allOf` part reaches by `$ref` (OpenAPI's inheritance:
//! `allOf: [{"$ref": "#/$defs/Base"}, {…}]`), wherever else it is used.

use std::collections::HashSet;

use serde_json::{Map, Value};

/// Keywords whose value is one subschema.
const ONE_SCHEMA: [&str; 9] = [
    "items",
    "additionalProperties",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
];
/// Keywords whose value is a list of subschemas that may each be closed.
const SCHEMA_LISTS: [&str; 4] = ["prefixItems", "anyOf", "oneOf", "items"];
/// Keywords whose value maps names to subschemas.
const SCHEMA_MAPS: [&str; 4] = ["properties", "$defs", "definitions", "patternProperties"];
/// Keywords by which a schema says what other keys it takes.
const OPEN_KEYWORDS: [&str; 3] = [
    "additionalProperties",
    "patternProperties",
    "unevaluatedProperties",
];

/// Closes every object schema in `schema` that lists properties and is silent on other keys.
pub fn close_objects(schema: &mut Value) {
    let mut open_refs = HashSet::new();
    all_of_refs(schema, &mut open_refs);
    if let Value::Object(root) = schema {
        for key in ["$defs", "definitions"] {
            let Some(Value::Object(defs)) = root.get_mut(key) else {
                continue;
            };
            for (name, def) in defs.iter_mut() {
                if open_refs.contains(&format!("#/{key}/{name}")) {
                    close(def, false);
                    // Marked done: the walk below must not close it.
                    mark_open(def);
                }
            }
        }
    }
    close(schema, true);
    unmark(schema);
}

/// Marks a definition the walk of [`close`] leaves open at its top.
const OPEN_MARK: &str = "x-pagoda-open";

fn mark_open(schema: &mut Value) {
    if let Value::Object(object) = schema {
        object.insert(OPEN_MARK.into(), Value::Bool(true));
    }
}

fn unmark(schema: &mut Value) {
    if let Value::Object(root) = schema {
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = root.get_mut(key) {
                for def in defs.values_mut() {
                    if let Value::Object(object) = def {
                        object.remove(OPEN_MARK);
                    }
                }
            }
        }
    }
}

/// The `$ref`s that are `allOf` parts, anywhere in `schema`.
fn all_of_refs(schema: &Value, refs: &mut HashSet<String>) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Array(parts)) = object.get("allOf") {
                let named = parts.iter().filter_map(|p| p.get("$ref")?.as_str());
                refs.extend(named.map(String::from));
            }
            object.values().for_each(|value| all_of_refs(value, refs));
        }
        Value::Array(items) => items.iter().for_each(|item| all_of_refs(item, refs)),
        _ => {}
    }
}

/// `may_close` is false for the parts of an `allOf`: each part's properties are the others'
/// "additional" ones, so closing a part would make the whole unsatisfiable.
fn close(schema: &mut Value, may_close: bool) {
    let Value::Object(object) = schema else {
        return;
    };
    let may_close = may_close && !object.contains_key(OPEN_MARK);
    if may_close
        && lists_properties(object)
        && !OPEN_KEYWORDS.iter().any(|k| object.contains_key(*k))
    {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ONE_SCHEMA {
        if let Some(sub @ Value::Object(_)) = object.get_mut(key) {
            close(sub, true);
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(subs)) = object.get_mut(key) {
            subs.iter_mut().for_each(|sub| close(sub, true));
        }
    }
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(subs)) = object.get_mut(key) {
            subs.values_mut().for_each(|sub| close(sub, true));
        }
    }
    if let Some(Value::Array(parts)) = object.get_mut("allOf") {
        parts.iter_mut().for_each(|part| close(part, false));
    }
}

fn lists_properties(object: &Map<String, Value>) -> bool {
    object
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| !properties.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn closed(mut schema: Value) -> Value {
        close_objects(&mut schema);
        schema
    }

    #[test]
    fn objects_with_properties_are_closed_at_every_depth() {
        let schema = closed(json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "string"}}},
            "list": {"type": "array", "items": {"properties": {"c": {}}}},
            "either": {"anyOf": [{"properties": {"d": {}}}, {"type": "null"}]}},
            "$defs": {"P": {"type": "object", "properties": {"e": {}}}}}));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["a"]["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["list"]["items"]["additionalProperties"],
            false
        );
        assert_eq!(
            schema["properties"]["either"]["anyOf"][0]["additionalProperties"],
            false
        );
        assert_eq!(schema["$defs"]["P"]["additionalProperties"], false);
        assert!(schema["properties"]["either"]["anyOf"][1]
            .get("additionalProperties")
            .is_none());
    }

    #[test]
    fn schemas_that_say_what_other_keys_they_take_are_left_alone() {
        for open in [
            json!({"properties": {"a": {}}, "additionalProperties": true}),
            json!({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}),
            json!({"properties": {"a": {}}, "patternProperties": {"^x": {}}}),
            json!({"properties": {"a": {}}, "unevaluatedProperties": false}),
            json!({"type": "object"}),
            json!({"type": "object", "properties": {}}),
        ] {
            assert_eq!(closed(open.clone()), open);
        }
    }

    #[test]
    fn the_parts_of_an_all_of_stay_open_but_their_insides_close() {
        let schema = closed(json!({"allOf": [
            {"properties": {"a": {"properties": {"x": {}}}}},
            {"properties": {"b": {}}}]}));
        assert!(schema["allOf"][0].get("additionalProperties").is_none());
        assert!(schema["allOf"][1].get("additionalProperties").is_none());
        assert_eq!(
            schema["allOf"][0]["properties"]["a"]["additionalProperties"],
            false
        );
    }

    #[test]
    fn a_definition_an_all_of_part_refers_to_stays_open() {
        let schema = closed(json!({
            "$defs": {"Base": {"properties": {"id": {"properties": {"n": {}}}}},
                "Other": {"properties": {"x": {}}}},
            "allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"name": {}}}]}));
        let base = &schema["$defs"]["Base"];
        assert!(base.get("additionalProperties").is_none(), "{schema}");
        assert!(base.get(OPEN_MARK).is_none(), "the mark is taken out again");
        assert_eq!(base["properties"]["id"]["additionalProperties"], false);
        assert_eq!(schema["$defs"]["Other"]["additionalProperties"], false);
    }
}
