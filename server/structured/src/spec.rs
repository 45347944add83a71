//! What a request asks its output to be, before compilation: a JSON schema, any JSON object, a
//! regex, one of a few strings, or a Lark grammar. Its canonical text keys the compiled-grammar
//! cache; its kind labels the metrics.

use llguidance::api::TopLevelGrammar;

use crate::closed_objects::close_objects;
use crate::gbnf::{gbnf_to_lark, is_gbnf};
use crate::schema_normalize::normalize_schema;
use serde_json::{json, Value};

/// One structured-output request.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputSpec {
    /// JSON that validates against this schema.
    JsonSchema(Value),
    /// Any JSON object (`response_format: {"type": "json_object"}`).
    JsonObject,
    /// Text that matches this regex, whole.
    Regex(String),
    /// Exactly one of these strings.
    Choice(Vec<String>),
    /// Text in this Lark grammar (llguidance's dialect; it also takes GBNF-style repetition).
    Grammar(String),
}

/// How JSON schemas are read unless the schema says otherwise (`x-guidance`). Layout: one space
/// after `:` and `,`, no other whitespace — free whitespace lets a small model pad forever and
/// never close the object; a fixed layout is what models are trained on.
///
/// Leniency, as vLLM serves schemas (its `auto` backend falls back until one takes the schema):
/// keywords llguidance cannot enforce (`uniqueItems`, `contains`, `not`, `if`/`then`,
/// `propertyNames`, …) are ignored with a warning, and `oneOf` is read as `anyOf` (disjoint
/// branches, such as discriminated unions, mean the same; overlapping ones cannot be kept
/// exclusive). A schema the client marked strict ([`strict_schema`]) is enforced whole or
/// refused.
fn json_options(lenient: bool) -> Value {
    let mut options = json!({
        "whitespace_flexible": false,
        "item_separator": ", ",
        "key_separator": ": ",
    });
    if lenient {
        options["lenient"] = json!(true);
        options["coerce_one_of"] = json!(true);
    }
    options
}

/// `schema` marked strict (OpenAI's `strict: true`): every keyword is enforced, and a schema
/// with one llguidance cannot enforce (or with overlapping `oneOf` branches) is refused. A
/// schema with its own `x-guidance` options keeps them.
pub fn strict_schema(schema: Value) -> Value {
    match schema {
        Value::Object(mut object) => {
            object
                .entry("x-guidance")
                .or_insert_with(|| json_options(false));
            Value::Object(object)
        }
        Value::Bool(true) => json!({"x-guidance": json_options(false)}),
        other => other,
    }
}

impl OutputSpec {
    /// The label of this kind in metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            OutputSpec::JsonSchema(_) => "json_schema",
            OutputSpec::JsonObject => "json_object",
            OutputSpec::Regex(_) => "regex",
            OutputSpec::Choice(_) => "choice",
            OutputSpec::Grammar(_) => "grammar",
        }
    }

    /// The text that identifies the compiled grammar (the cache key).
    pub fn canonical_text(&self) -> String {
        let body = match self {
            OutputSpec::JsonSchema(schema) => schema.to_string(),
            OutputSpec::JsonObject => String::new(),
            OutputSpec::Regex(regex) => regex.clone(),
            OutputSpec::Choice(choices) => Value::from(choices.clone()).to_string(),
            OutputSpec::Grammar(grammar) => grammar.clone(),
        };
        format!("{}:{body}", self.kind())
    }

    /// Bytes of the user's grammar text (checked against the size limit before compiling).
    pub fn num_source_bytes(&self) -> usize {
        self.canonical_text().len()
    }

    /// llguidance's grammar for this spec.
    pub fn to_grammar(&self) -> Result<TopLevelGrammar, String> {
        match self {
            OutputSpec::JsonSchema(schema) => {
                let mut schema = schema.clone();
                normalize_schema(&mut schema)?;
                close_objects(&mut schema);
                Ok(TopLevelGrammar::from_json_schema(with_json_options(
                    schema,
                )?))
            }
            OutputSpec::JsonObject => Ok(TopLevelGrammar::from_json_schema(with_json_options(
                json!({"type": "object"}),
            )?)),
            OutputSpec::Regex(regex) => Ok(TopLevelGrammar::from_regex(regex)),
            OutputSpec::Choice(choices) => Ok(TopLevelGrammar::from_lark(choice_lark(choices)?)),
            // GBNF (llama.cpp's, and vLLM's EBNF examples) is converted to Lark first.
            OutputSpec::Grammar(grammar) if is_gbnf(grammar) => {
                Ok(TopLevelGrammar::from_lark(gbnf_to_lark(grammar)?))
            }
            OutputSpec::Grammar(grammar) => {
                TopLevelGrammar::from_lark_or_grammar_list(grammar).map_err(|e| e.to_string())
            }
        }
    }
}

/// The schema with our JSON options (layout, `oneOf` as `anyOf`), unless it sets its own
/// `x-guidance`.
fn with_json_options(mut schema: Value) -> Result<Value, String> {
    match &mut schema {
        Value::Object(object) => {
            object
                .entry("x-guidance")
                .or_insert_with(|| json_options(true));
            Ok(schema)
        }
        // `true` is the schema that takes anything; `false` takes nothing.
        Value::Bool(true) => Ok(json!({"x-guidance": json_options(true)})),
        _ => Err("a JSON schema must be an object".to_string()),
    }
}

/// `start: "a" | "b"`, each choice a JSON-quoted literal (Lark's string syntax).
fn choice_lark(choices: &[String]) -> Result<String, String> {
    if choices.is_empty() {
        return Err("`choice` must list at least one string".to_string());
    }
    let alternatives: Vec<String> = choices
        .iter()
        .map(|choice| Value::from(choice.as_str()).to_string())
        .collect();
    Ok(format!("start: {}\n", alternatives.join(" | ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_tells_kinds_and_contents_apart() {
        let a = OutputSpec::Regex("a+".into());
        let b = OutputSpec::Grammar("a+".into());
        assert_ne!(a.canonical_text(), b.canonical_text());
        assert_eq!(
            a.canonical_text(),
            OutputSpec::Regex("a+".into()).canonical_text()
        );
        assert_eq!(a.kind(), "regex");
    }

    #[test]
    fn layout_is_added_unless_given_and_non_object_schemas_are_refused() {
        let schema = with_json_options(json!({"type": "string"})).expect("object");
        assert_eq!(schema["x-guidance"]["key_separator"], ": ");
        assert_eq!(schema["x-guidance"]["coerce_one_of"], true);
        assert_eq!(schema["x-guidance"]["lenient"], true);
        let strict = with_json_options(strict_schema(json!({"type": "string"}))).expect("object");
        assert_eq!(strict["x-guidance"]["key_separator"], ": ");
        assert!(strict["x-guidance"].get("lenient").is_none());
        let own = strict_schema(json!({"x-guidance": {"lenient": true}}));
        assert_eq!(own["x-guidance"], json!({"lenient": true}));
        let own = with_json_options(json!({"x-guidance": {"lenient": true}})).expect("object");
        assert_eq!(own["x-guidance"], json!({"lenient": true}));
        assert!(with_json_options(json!(true)).is_ok());
        assert!(with_json_options(json!([1])).is_err());
        assert!(with_json_options(json!(false)).is_err());
    }

    #[test]
    fn choices_become_quoted_alternatives() {
        let lark = choice_lark(&["yes".into(), "say \"no\"".into()]).expect("choices");
        assert_eq!(lark, "start: \"yes\" | \"say \\\"no\\\"\"\n");
        assert!(choice_lark(&[]).is_err());
    }
}
