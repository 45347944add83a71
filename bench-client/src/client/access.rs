//! [`ServerAccess`]: what every HTTP exchange with the server under test carries — the API key,
//! the extra headers of `--header`, and the TLS trust of `--insecure` — so that the readiness
//! probe and model discovery reach a gateway the same way the benchmark's requests do.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};

use super::error::ClientError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerAccess {
    /// Sent as `Authorization: Bearer KEY`.
    pub api_key: Option<String>,
    /// Extra headers, sent with every request (after the key: an `Authorization` here wins).
    pub headers: Vec<(String, String)>,
    /// Accept any TLS certificate (a self-signed one, a name that does not match): vLLM's
    /// `--insecure`. Off: `https://` servers must present a certificate the system's or
    /// Mozilla's roots trust.
    pub insecure: bool,
}

impl ServerAccess {
    /// The key's and the extra headers, checked.
    pub fn header_map(&self) -> Result<HeaderMap, ClientError> {
        let invalid = |name: &str, reason: String| ClientError::InvalidHeader {
            name: name.to_string(),
            reason,
        };
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            let value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|e| invalid("authorization", e.to_string()))?;
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in &self.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| invalid(name, e.to_string()))?;
            let header_value =
                HeaderValue::from_str(value).map_err(|e| invalid(name, e.to_string()))?;
            headers.insert(header_name, header_value);
        }
        Ok(headers)
    }

    /// A client builder with this access's TLS trust (headers are the caller's to set, with
    /// its own).
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder().danger_accept_invalid_certs(self.insecure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_and_headers_are_sent_and_bad_ones_refused() {
        let access = ServerAccess {
            api_key: Some("k".into()),
            headers: vec![("x-tenant".into(), "a".into())],
            insecure: false,
        };
        let headers = access.header_map().expect("valid");
        assert_eq!(headers[AUTHORIZATION], "Bearer k");
        assert_eq!(headers["x-tenant"], "a");
        let overriding = ServerAccess {
            headers: vec![("Authorization".into(), "Basic xyz".into())],
            ..access.clone()
        };
        assert_eq!(
            overriding.header_map().expect("valid")[AUTHORIZATION],
            "Basic xyz"
        );
        for (name, value) in [("bad name", "v"), ("x-ok", "line\nbreak")] {
            let bad = ServerAccess {
                headers: vec![(name.into(), value.into())],
                ..ServerAccess::default()
            };
            assert!(matches!(
                bad.header_map(),
                Err(ClientError::InvalidHeader { .. })
            ));
        }
    }
}
