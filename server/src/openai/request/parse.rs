//! Reading a request body: UTF-8, one JSON object and nothing after it, each field of its type;
//! a failure is a 400 that names the field at fault (`temperature`, `messages[0].role`).

use serde::de::DeserializeOwned;

use crate::openai::error::ApiError;
use crate::openai::request::body::{ChatOptions, CommonFields};

/// Parses a JSON body, naming the field at fault on error.
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let text = std::str::from_utf8(body).map_err(|e| {
        ApiError::invalid("body", format!("the request body is not valid UTF-8 ({e})"))
    })?;
    // A derived struct reader would also take a JSON array, field by field: only objects are bodies.
    if !text.trim_start().starts_with('{') {
        let what = if text.trim().is_empty() {
            "empty"
        } else {
            "not a JSON object"
        };
        return Err(ApiError::invalid(
            "body",
            format!("the request body is {what}"),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::invalid(
                "body",
                format!(
                    "the request body is not valid JSON: {inner}{}",
                    surrogate_hint(&inner)
                ),
            );
        }
        let missing = missing_field(&inner).map(|field| match path.as_str() {
            "." => field.to_string(),
            _ => format!("{path}.{field}"),
        });
        let (param, inner) = match (missing, path.as_str()) {
            // A required field that is absent: name it (`messages`, `messages[0].role`).
            (Some(param), _) => (param, inner),
            // Fields read through `#[serde(flatten)]` lose their path: find it in the shared
            // fields alone.
            (None, ".") => shared_field_error(text).unwrap_or_else(|| ("body".to_string(), inner)),
            (None, _) => (path, inner),
        };
        ApiError::invalid(param.clone(), format!("invalid `{param}`: {inner}"))
    })?;
    // Only whitespace may follow the object: `{...} garbage` is not a JSON body.
    deserializer.end().map_err(|error| {
        ApiError::invalid(
            "body",
            format!("the request body is not valid JSON: {error}"),
        )
    })?;
    Ok(value)
}

/// What a bad `\u` escape most likely is: half of a UTF-16 surrogate pair (serde's own message
/// speaks of hex escapes only).
fn surrogate_hint(error: &serde_json::Error) -> &'static str {
    match error.to_string().contains("hex escape") {
        true => {
            " (a \\uD800-\\uDFFF escape must be one half of a surrogate pair, high then low: \
             a lone surrogate is not a Unicode character)"
        }
        false => "",
    }
}

/// The field serde found missing (its message is "missing field `name`").
fn missing_field(error: &serde_json::Error) -> Option<String> {
    let message = error.to_string();
    let rest = message.strip_prefix("missing field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

/// The path and error of a bad value among the fields bodies read through `#[serde(flatten)]`
/// (serde loses their path there): the shared [`CommonFields`] first (all of a completion
/// request's), then chat's own [`ChatOptions`] (which chat and the Responses API flatten).
fn shared_field_error(text: &str) -> Option<(String, serde_json::Error)> {
    field_error::<CommonFields>(text).or_else(|| field_error::<ChatOptions>(text))
}

/// The path and error of a bad value when `text` is read as a `T`, if one is bad and the path
/// names it.
fn field_error<T: DeserializeOwned>(text: &str) -> Option<(String, serde_json::Error)> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let error = serde_path_to_error::deserialize::<_, T>(&mut deserializer).err()?;
    let path = error.path().to_string();
    (path != ".").then(|| (path, error.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::request::body::{ChatCompletionRequest, CompletionRequest};

    #[test]
    fn errors_name_the_field() {
        let wrong_type =
            parse_body::<ChatCompletionRequest>(br#"{"messages":[],"temperature":"hot"}"#)
                .expect_err("string temperature");
        assert_eq!(wrong_type.param.as_deref(), Some("temperature"));
        let completion =
            parse_body::<CompletionRequest>(br#"{"prompt":"x","stop":[1],"best_of":2}"#)
                .expect_err("numbers as stop strings");
        assert_eq!(
            completion.param.as_deref(),
            Some("stop"),
            "{}",
            completion.message
        );
        let own_field =
            parse_body::<CompletionRequest>(br#"{"prompt":"x","echo":"yes"}"#).expect_err("echo");
        assert_eq!(
            own_field.param.as_deref(),
            Some("echo"),
            "{}",
            own_field.message
        );
        let missing =
            parse_body::<ChatCompletionRequest>(br#"{"model":"m"}"#).expect_err("no messages");
        assert!(missing.message.contains("messages"), "{}", missing.message);
        assert_eq!(missing.param.as_deref(), Some("messages"));
        let missing = parse_body::<CompletionRequest>(br#"{"model":"m"}"#).expect_err("prompt");
        assert_eq!(
            missing.param.as_deref(),
            Some("prompt"),
            "{}",
            missing.message
        );
        let nested = parse_body::<ChatCompletionRequest>(br#"{"messages":[{"content":"hi"}]}"#)
            .expect_err("no role");
        assert_eq!(
            nested.param.as_deref(),
            Some("messages[0].role"),
            "{}",
            nested.message
        );
        let array = parse_body::<ChatCompletionRequest>(b"[null, [], 3]").expect_err("array");
        assert_eq!(array.param.as_deref(), Some("body"));
        let malformed = parse_body::<ChatCompletionRequest>(b"{\"model\":").expect_err("eof");
        assert_eq!(malformed.param.as_deref(), Some("body"));
        for lone in [r#"{"model":"\ud800 x"}"#, r#"{"model":"\udc00"}"#] {
            let error = parse_body::<ChatCompletionRequest>(lone.as_bytes()).expect_err("lone");
            assert_eq!(error.param.as_deref(), Some("body"));
            assert!(
                error.message.contains("lone surrogate"),
                "{}",
                error.message
            );
        }
        let pair =
            parse_body::<ChatCompletionRequest>(br#"{"model":"\ud83d\ude00","messages":[]}"#)
                .expect("a surrogate pair is one character");
        assert_eq!(pair.options.fields.model.as_deref(), Some("\u{1F600}"));
        let bad_utf8 =
            parse_body::<ChatCompletionRequest>(b"{\"model\":\"\xff\"}").expect_err("utf8");
        assert!(bad_utf8.message.contains("UTF-8"));
        for trailing in [
            &b"{\"messages\":[]} x"[..],
            b"{\"messages\":[]}{}",
            b"{\"messages\":[]}]",
        ] {
            let error = parse_body::<ChatCompletionRequest>(trailing).expect_err("trailing bytes");
            assert_eq!(error.param.as_deref(), Some("body"), "{}", error.message);
            assert!(error.message.contains("trailing"), "{}", error.message);
        }
        parse_body::<ChatCompletionRequest>(b"{\"messages\":[]} \r\n\t")
            .expect("whitespace is fine");
    }
}
