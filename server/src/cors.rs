//! Cross-origin requests from browsers (CORS), vLLM's flags: `--allowed-origins`,
//! `--allowed-methods`, `--allowed-headers`, `--allow-credentials`. Off unless origins are given
//! (a browser page on another origin cannot read any answer), unlike vLLM, which allows every
//! origin by default: a server is not opened to every web page a user visits unless its
//! operator says so. When on, the layer sits outside every other, so a preflight (`OPTIONS`,
//! which carries no API key) is answered before authentication, and errors carry the headers
//! too, so a page can read them.

use std::time::Duration;

use anyhow::{bail, Context};
use axum::http::{HeaderName, HeaderValue, Method};
use clap::Args;
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

/// How long a browser may keep a preflight's answer (Starlette's default, which vLLM uses).
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Default, Args)]
pub struct CorsArgs {
    /// Origins whose pages may call the API: a JSON list as vLLM takes it ('["https://ui.example"]')
    /// or comma-separated; `*` for any. [default: none, CORS off]
    #[arg(long, value_name = "LIST")]
    pub allowed_origins: Option<String>,
    /// Methods allowed from those origins (same forms). [default: *]
    #[arg(long, value_name = "LIST", requires = "allowed_origins")]
    pub allowed_methods: Option<String>,
    /// Request headers allowed from those origins (same forms). [default: *]
    #[arg(long, value_name = "LIST", requires = "allowed_origins")]
    pub allowed_headers: Option<String>,
    /// Let those pages send credentials (cookies, HTTP auth); a `*` then answers with the
    /// request's own origin, methods and headers, as the CORS rules require.
    #[arg(long, requires = "allowed_origins")]
    pub allow_credentials: bool,
}

impl CorsArgs {
    /// The layer these flags describe; `None` without `--allowed-origins`.
    pub fn layer(&self) -> anyhow::Result<Option<CorsLayer>> {
        let Some(origins) = &self.allowed_origins else {
            return Ok(None);
        };
        let origins = parse_list(origins, "--allowed-origins")?;
        let methods = parse_optional_list(&self.allowed_methods, "--allowed-methods")?;
        let headers = parse_optional_list(&self.allowed_headers, "--allowed-headers")?;
        let credentials = self.allow_credentials;
        let layer = CorsLayer::new()
            .allow_origin(allow_origin(&origins, credentials)?)
            .allow_methods(allow_methods(&methods, credentials)?)
            .allow_headers(allow_headers(&headers, credentials)?)
            .allow_credentials(credentials)
            .max_age(PREFLIGHT_MAX_AGE);
        Ok(Some(layer))
    }
}

/// A JSON list of strings, or comma-separated values; never empty.
fn parse_list(text: &str, flag: &str) -> anyhow::Result<Vec<String>> {
    let trimmed = text.trim();
    let items: Vec<String> = if trimmed.starts_with('[') {
        serde_json::from_str(trimmed)
            .with_context(|| format!("{flag} {text:?}: expected a JSON list of strings"))?
    } else {
        trimmed
            .split(',')
            .map(|item| item.trim().to_string())
            .collect()
    };
    let items: Vec<String> = items.into_iter().filter(|item| !item.is_empty()).collect();
    if items.is_empty() {
        bail!("{flag} {text:?}: no values");
    }
    Ok(items)
}

/// `*` unless given.
fn parse_optional_list(text: &Option<String>, flag: &str) -> anyhow::Result<Vec<String>> {
    match text {
        Some(text) => parse_list(text, flag),
        None => Ok(vec!["*".to_string()]),
    }
}

/// The rule for one list: `*` allows any (or, with credentials, echoes the request's own, since
/// the CORS rules forbid `*` there), else exactly the values `parse` reads.
struct ListRule<T, V> {
    any: fn() -> T,
    mirror: fn() -> T,
    list: fn(Vec<V>) -> T,
}

impl<T, V> ListRule<T, V> {
    fn build(
        &self,
        items: &[String],
        credentials: bool,
        parse: impl Fn(&str) -> anyhow::Result<V>,
    ) -> anyhow::Result<T> {
        if items.iter().any(|item| item == "*") {
            return Ok(if credentials {
                (self.mirror)()
            } else {
                (self.any)()
            });
        }
        let values = items
            .iter()
            .map(|item| parse(item))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok((self.list)(values))
    }
}

fn allow_origin(origins: &[String], credentials: bool) -> anyhow::Result<AllowOrigin> {
    let rule = ListRule {
        any: AllowOrigin::any,
        mirror: AllowOrigin::mirror_request,
        list: AllowOrigin::list,
    };
    rule.build(origins, credentials, |origin| {
        let origin = origin.trim_end_matches('/');
        // An origin is `scheme://host[:port]`; anything else would never match a browser's.
        let host = origin.split_once("://").map(|(_, host)| host);
        if host.is_none_or(|host| host.is_empty() || host.contains('/')) {
            bail!("--allowed-origins: {origin:?} is not an origin (scheme://host[:port])");
        }
        HeaderValue::from_str(origin)
            .with_context(|| format!("--allowed-origins: {origin:?} is not a valid origin"))
    })
}

fn allow_methods(methods: &[String], credentials: bool) -> anyhow::Result<AllowMethods> {
    let rule = ListRule {
        any: AllowMethods::any,
        mirror: AllowMethods::mirror_request,
        list: AllowMethods::list,
    };
    rule.build(methods, credentials, |method| {
        Method::from_bytes(method.to_ascii_uppercase().as_bytes())
            .with_context(|| format!("--allowed-methods: {method:?} is not an HTTP method"))
    })
}

fn allow_headers(headers: &[String], credentials: bool) -> anyhow::Result<AllowHeaders> {
    let rule = ListRule {
        any: AllowHeaders::any,
        mirror: AllowHeaders::mirror_request,
        list: AllowHeaders::list,
    };
    rule.build(headers, credentials, |header| {
        HeaderName::from_bytes(header.to_ascii_lowercase().as_bytes())
            .with_context(|| format!("--allowed-headers: {header:?} is not a header name"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(origins: Option<&str>, credentials: bool) -> CorsArgs {
        CorsArgs {
            allowed_origins: origins.map(str::to_string),
            allow_credentials: credentials,
            ..CorsArgs::default()
        }
    }

    #[test]
    fn lists_read_as_json_or_commas_and_bad_values_are_refused() {
        let json =
            parse_list(r#"["https://a.example", "https://b.example"]"#, "--x").expect("json");
        assert_eq!(json, ["https://a.example", "https://b.example"]);
        let commas = parse_list("https://a.example, https://b.example", "--x").expect("commas");
        assert_eq!(commas, json);
        assert!(parse_list("[1, 2]", "--x").is_err());
        assert!(parse_list(" , ", "--x").is_err());
        assert!(args(None, false).layer().expect("valid").is_none());
        let bad_method = CorsArgs {
            allowed_methods: Some("GET, NOT A METHOD".into()),
            ..args(Some("*"), false)
        };
        assert!(bad_method.layer().is_err());
        for bad in ["ui.example", "https://ui.example/app", "https://a\u{1}b"] {
            assert!(args(Some(bad), false).layer().is_err(), "{bad}");
        }
        assert!(args(Some("https://ui.example/"), false).layer().is_ok());
    }

    #[test]
    fn credentials_with_wildcards_mirror_the_request_instead_of_panicking() {
        // tower-http refuses (panics on) `*` beside credentials; the layer must build and serve.
        let layer = args(Some("*"), true).layer().expect("valid").expect("on");
        let service = tower::ServiceBuilder::new().layer(layer).service_fn(
            |_: axum::http::Request<axum::body::Body>| async {
                Ok::<_, std::convert::Infallible>(axum::http::Response::new(
                    axum::body::Body::empty(),
                ))
            },
        );
        drop(service);
    }
}
