//! A schema rewritten into what llguidance reads as the schema means:
//! - **Bounds at the 64-bit limit.** A bound that becomes `i64::MIN` (OpenAPI's `int64`
//!   minimum, `-9223372036854775808`, or anything below) makes llguidance negate `i64::MIN`: a
//!   panic in a debug build and endless recursion, a stack overflow that aborts the process, in
//!   a release build. Such a lower bound is raised to the lowest bound it reads,
//!   [`LOWEST_INTEGER_BOUND`] (−2⁶³ + 1024, the next `f64` above −2⁶³): it only narrows what may
//!   be written, by 1,024 integers no model writes. Such an upper bound cannot be narrowed
//!   without breaking the schema: it is refused.
//! - **Draft-04 exclusive bounds.** `exclusiveMinimum: true` beside `minimum: x` (draft 4's
//!   boolean form) becomes `exclusiveMinimum: x` (the number form of draft 6 onwards), `false`
//!   is dropped; likewise for the maximum.
//! - **Unknown formats.** A `format` llguidance has no grammar for (pydantic's `password`,
//!   `binary`, `path`, `ipvanyaddress`, a custom one) is dropped: JSON Schema makes unknown
//!   formats annotations, which constrain nothing.
//!
//! Data inside a schema (`const`, `enum`, `default`, `examples`) is never rewritten.

use serde_json::{Map, Value};

/// The lowest integer bound llguidance reads safely: the next `f64` above −2⁶³.
pub const LOWEST_INTEGER_BOUND: i64 = -9_223_372_036_854_774_784;
/// The formats llguidance writes a grammar for.
const KNOWN_FORMATS: [&str; 11] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
    "unknown",
];
/// Keywords whose values are data, not schemas.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];
const LOWER_BOUNDS: [&str; 2] = ["minimum", "exclusiveMinimum"];
const UPPER_BOUNDS: [&str; 2] = ["maximum", "exclusiveMaximum"];

/// Rewrites `schema` in place (see the module's notes); `Err` names a bound it cannot read.
pub fn normalize_schema(schema: &mut Value) -> Result<(), String> {
    match schema {
        Value::Object(object) => {
            normalize_object(object)?;
            for (key, value) in object.iter_mut() {
                if !DATA_KEYWORDS.contains(&key.as_str()) {
                    normalize_schema(value)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter_mut().try_for_each(normalize_schema),
        _ => Ok(()),
    }
}

fn is_too_low(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_f64)
        .is_some_and(|bound| bound < LOWEST_INTEGER_BOUND as f64)
}

fn normalize_object(object: &mut Map<String, Value>) -> Result<(), String> {
    draft4_exclusive(object, "exclusiveMinimum", "minimum");
    draft4_exclusive(object, "exclusiveMaximum", "maximum");
    for key in LOWER_BOUNDS {
        if is_too_low(object.get(key)) {
            object.insert(key.into(), Value::from(LOWEST_INTEGER_BOUND));
        }
    }
    if let Some(key) = UPPER_BOUNDS
        .iter()
        .find(|key| is_too_low(object.get(**key)))
    {
        return Err(format!(
            "`{key}` {} is below the lowest bound supported ({LOWEST_INTEGER_BOUND})",
            object[*key]
        ));
    }
    let unknown_format = object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !KNOWN_FORMATS.contains(&format));
    if unknown_format {
        object.remove("format");
    }
    Ok(())
}

/// Draft 4's `exclusive: true` beside `bound: x` → `exclusive: x`; `false` → nothing.
fn draft4_exclusive(object: &mut Map<String, Value>, exclusive: &str, bound: &str) {
    match object.get(exclusive) {
        Some(Value::Bool(true)) => match object.remove(bound) {
            Some(value) => {
                object.insert(exclusive.into(), value);
            }
            None => {
                object.remove(exclusive);
            }
        },
        Some(Value::Bool(false)) => {
            object.remove(exclusive);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn normalized(mut schema: Value) -> Value {
        normalize_schema(&mut schema).expect("normalized");
        schema
    }

    #[test]
    fn lower_bounds_at_the_64_bit_limit_are_raised_and_upper_ones_refused() {
        let schema = json!({"type": "object", "properties": {"id": {"type": "integer",
            "format": "int64", "minimum": -9_223_372_036_854_775_808i64,
            "maximum": 9_223_372_036_854_775_807i64},
            "low": {"type": "integer", "exclusiveMinimum": -1e19}}});
        let out = normalized(schema);
        let id = &out["properties"]["id"];
        assert_eq!(id["minimum"], json!(LOWEST_INTEGER_BOUND));
        assert_eq!(id["maximum"], json!(9_223_372_036_854_775_807i64), "kept");
        assert!(
            id.get("format").is_none(),
            "int64 is no format llguidance knows"
        );
        assert_eq!(
            out["properties"]["low"]["exclusiveMinimum"],
            json!(LOWEST_INTEGER_BOUND)
        );
        for upper in ["maximum", "exclusiveMaximum"] {
            let mut schema = json!({"properties": {"x": {"type": "integer", upper: -1e19}}});
            let error = normalize_schema(&mut schema).expect_err("refused");
            assert!(error.contains(upper), "{error}");
        }
        // Ordinary bounds are left alone.
        let plain = json!({"type": "integer", "minimum": -5, "maximum": 7});
        assert_eq!(normalized(plain.clone()), plain);
    }

    #[test]
    fn draft4_exclusive_flags_become_numbers() {
        let out = normalized(
            json!({"type": "number", "minimum": 0, "exclusiveMinimum": true,
            "maximum": 1, "exclusiveMaximum": false}),
        );
        assert_eq!(
            out,
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
        );
        // The number form is left as it is.
        let modern = json!({"type": "number", "exclusiveMinimum": 0.5});
        assert_eq!(normalized(modern.clone()), modern);
    }

    #[test]
    fn unknown_formats_are_dropped_and_data_is_never_touched() {
        let schema = json!({"type": "object", "properties": {
            "secret": {"type": "string", "format": "password", "writeOnly": true},
            "when": {"type": "string", "format": "date-time"},
            "format": {"type": "string", "default": {"format": "kept", "minimum": -1e30}}},
            "examples": [{"format": "x"}], "const": {"format": "y"}});
        let out = normalized(schema);
        let properties = &out["properties"];
        assert!(properties["secret"].get("format").is_none());
        assert_eq!(properties["when"]["format"], "date-time");
        assert_eq!(
            properties["format"]["type"], "string",
            "a property named format"
        );
        assert_eq!(
            properties["format"]["default"],
            json!({"format": "kept", "minimum": -1e30})
        );
        assert_eq!(out["examples"], json!([{"format": "x"}]));
        assert_eq!(out["const"], json!({"format": "y"}));
    }
}
