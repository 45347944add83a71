//! The structured-output fields of a request → one [`OutputSpec`], with the field that asked for
//! it (so a compile error names it): OpenAI's `response_format` (chat), vLLM's
//! `structured_outputs` and its older `guided_json`, `guided_regex`, `guided_choice`,
//! `guided_grammar`. At most one of them may constrain a request.

use pagoda_structured::{strict_schema, OutputSpec};
use serde_json::Value;

use crate::openai::error::ApiError;
use crate::openai::request::body::CommonFields;

/// A request's constraint and the field it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedSpec {
    pub spec: OutputSpec,
    pub field: String,
}

/// vLLM's `structured_outputs` keys that choose the kind of output.
const STRUCTURED_OUTPUT_KINDS: [&str; 6] = [
    "json",
    "regex",
    "choice",
    "grammar",
    "json_object",
    "structural_tag",
];

/// The one constraint the request's fields ask for, if any (`response_format`: OpenAI's chat field,
/// which vLLM takes on completions too).
pub fn requested_spec(
    fields: &CommonFields,
    response_format: Option<&Value>,
) -> Result<Option<RequestedSpec>, ApiError> {
    let mut found: Vec<RequestedSpec> = Vec::new();
    if let Some(format) = response_format {
        found.extend(from_response_format(format)?);
    }
    if let Some(value) = fields.structured_outputs.as_ref().filter(|v| !v.is_null()) {
        found.push(from_structured_outputs(value)?);
    }
    found.extend(from_guided_fields(fields)?);
    if found.len() > 1 {
        let names: Vec<&str> = found.iter().map(|r| r.field.as_str()).collect();
        return Err(ApiError::invalid(
            found[1].field.clone(),
            format!(
                "only one structured-output constraint per request, got {}",
                names.join(" and ")
            ),
        ));
    }
    Ok(found.pop())
}

/// OpenAI's `response_format`: `text`, `json_object`, or `json_schema` with `schema`.
fn from_response_format(format: &Value) -> Result<Option<RequestedSpec>, ApiError> {
    const FIELD: &str = "response_format";
    if format.is_null() {
        return Ok(None);
    }
    let kind = format.get("type").and_then(Value::as_str).ok_or_else(|| {
        ApiError::invalid(
            "response_format.type",
            "`response_format` must be an object with a string `type`",
        )
    })?;
    let spec = match kind {
        "text" => return Ok(None),
        "json_object" => OutputSpec::JsonObject,
        "json_schema" => {
            let json_schema = format.get("json_schema").filter(|v| v.is_object());
            let schema = json_schema.and_then(|j| j.get("schema")).ok_or_else(|| {
                ApiError::invalid(
                    "response_format.json_schema.schema",
                    "`response_format` of type json_schema needs `json_schema.schema`",
                )
            })?;
            let spec = schema_spec(schema, "response_format.json_schema.schema")?;
            let spec = match json_schema.and_then(|j| j.get("strict")) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => spec,
                Some(Value::Bool(true)) => match spec {
                    OutputSpec::JsonSchema(schema) => OutputSpec::JsonSchema(strict_schema(schema)),
                    other => other,
                },
                Some(_) => {
                    return Err(ApiError::invalid(
                        "response_format.json_schema.strict",
                        "`json_schema.strict` must be a boolean",
                    ))
                }
            };
            // Required by OpenAI and vLLM alike.
            match json_schema.and_then(|j| j.get("name")) {
                Some(Value::String(_)) => {}
                Some(_) => {
                    return Err(ApiError::invalid(
                        "response_format.json_schema.name",
                        "`json_schema.name` must be a string",
                    ))
                }
                None => {
                    return Err(ApiError::invalid(
                        "response_format.json_schema.name",
                        "`response_format` of type json_schema needs `json_schema.name`",
                    ))
                }
            }
            return Ok(Some(RequestedSpec {
                spec,
                field: "response_format.json_schema.schema".into(),
            }));
        }
        other => {
            return Err(ApiError::invalid(
                "response_format.type",
                format!(
                    "unknown `response_format` type {other:?}: expected text, json_object or \
                     json_schema"
                ),
            ))
        }
    };
    Ok(Some(RequestedSpec {
        spec,
        field: FIELD.into(),
    }))
}

/// vLLM's `structured_outputs`: exactly one of `json`, `regex`, `choice`, `grammar`,
/// `json_object` (options such as `disable_any_whitespace` are accepted and ignored).
fn from_structured_outputs(value: &Value) -> Result<RequestedSpec, ApiError> {
    let object = value.as_object().ok_or_else(|| {
        ApiError::invalid(
            "structured_outputs",
            "`structured_outputs` must be an object",
        )
    })?;
    let present: Vec<&str> = STRUCTURED_OUTPUT_KINDS
        .into_iter()
        .filter(|key| {
            object
                .get(*key)
                .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
        })
        .collect();
    let key = match present.as_slice() {
        [] => {
            return Err(ApiError::invalid(
                "structured_outputs",
                "`structured_outputs` needs one of json, regex, choice, grammar or json_object",
            ))
        }
        [key] => *key,
        _ => {
            return Err(ApiError::invalid(
                "structured_outputs",
                format!(
                    "`structured_outputs` takes one of json, regex, choice, grammar or \
                     json_object, got {}",
                    present.join(", ")
                ),
            ))
        }
    };
    let field = format!("structured_outputs.{key}");
    let spec = spec_of_kind(key, &object[key], &field)?;
    Ok(RequestedSpec { spec, field })
}

/// The spec one kind of constraint asks for, its value checked and `field` named on error.
fn spec_of_kind(kind: &str, value: &Value, field: &str) -> Result<OutputSpec, ApiError> {
    Ok(match kind {
        "json" => schema_spec(value, field)?,
        "regex" => OutputSpec::Regex(string_of(value, field)?),
        "choice" => OutputSpec::Choice(choices_of(value, field)?),
        "grammar" => OutputSpec::Grammar(string_of(value, field)?),
        "json_object" => OutputSpec::JsonObject,
        _ => return Err(ApiError::unsupported(field, "`structural_tag`")),
    })
}

/// vLLM's older top-level `guided_*` fields: the same kinds, checked the same way.
fn from_guided_fields(fields: &CommonFields) -> Result<Vec<RequestedSpec>, ApiError> {
    let guided = [
        ("guided_json", "json", &fields.guided_json),
        ("guided_regex", "regex", &fields.guided_regex),
        ("guided_choice", "choice", &fields.guided_choice),
        ("guided_grammar", "grammar", &fields.guided_grammar),
    ];
    guided
        .into_iter()
        .filter_map(|(field, kind, value)| {
            Some((field, kind, value.as_ref().filter(|v| !v.is_null())?))
        })
        .map(|(field, kind, value)| {
            Ok(RequestedSpec {
                spec: spec_of_kind(kind, value, field)?,
                field: field.into(),
            })
        })
        .collect()
}

/// A schema given as an object (or `true`), or as a string holding one (vLLM accepts both).
fn schema_spec(value: &Value, field: &str) -> Result<OutputSpec, ApiError> {
    let schema = match value {
        Value::String(text) => serde_json::from_str(text)
            .map_err(|e| ApiError::invalid(field, format!("`{field}` is not valid JSON: {e}")))?,
        other => other.clone(),
    };
    if !(schema.is_object() || schema == Value::Bool(true)) {
        return Err(ApiError::invalid(
            field,
            format!("`{field}` must be a JSON schema object"),
        ));
    }
    Ok(OutputSpec::JsonSchema(schema))
}

fn string_of(value: &Value, field: &str) -> Result<String, ApiError> {
    match value.as_str() {
        Some(text) if !text.trim().is_empty() => Ok(text.to_string()),
        _ => Err(ApiError::invalid(
            field,
            format!("`{field}` must be a non-empty string"),
        )),
    }
}

fn choices_of(value: &Value, field: &str) -> Result<Vec<String>, ApiError> {
    let choices: Option<Vec<String>> = value.as_array().and_then(|items| {
        items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect()
    });
    match choices {
        Some(choices) if !choices.is_empty() => Ok(choices),
        _ => Err(ApiError::invalid(
            field,
            format!("`{field}` must be a non-empty list of strings"),
        )),
    }
}

#[cfg(test)]
#[path = "output_spec_tests.rs"]
mod tests;
