//! [`Client`]: the HTTP client of one [`RequestConfig`], its default headers set once and its
//! connection pool shared by every clone. Sending a request is in `request`.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};

use super::config::{normalize_base_url, RequestConfig};
use super::error::ClientError;

/// Sends requests of one configuration; cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct Client {
    /// Pooled: a connection is reused while idle less than `pool_idle_timeout`.
    pub(super) http: reqwest::Client,
    /// Keeps no idle connection: every request on it opens a fresh one (the retry of a request
    /// whose pooled connection turned out closed).
    pub(super) fresh: reqwest::Client,
    pub(super) url: String,
    pub(super) config: Arc<RequestConfig>,
}

impl Client {
    /// Builds the HTTP clients: headers set once, TCP_NODELAY on (reqwest's default, set here
    /// explicitly), and no cap on idle connections per host (`pool_max_idle_per_host`), so every
    /// connection a burst opened is kept for the next burst (if it comes within
    /// `pool_idle_timeout`) instead of being reopened.
    pub fn new(config: RequestConfig) -> Result<Self, ClientError> {
        let idle_timeout = config.pool_idle_timeout;
        let max_idle = if idle_timeout.is_zero() {
            0
        } else {
            usize::MAX
        };
        let http = http_client(&config, max_idle, idle_timeout)?;
        let fresh = http_client(&config, 0, idle_timeout)?;
        let url = format!(
            "{}{}",
            normalize_base_url(&config.base_url),
            config.endpoint.path()
        );
        Ok(Self {
            http,
            fresh,
            url,
            config: Arc::new(config),
        })
    }

    pub fn config(&self) -> &RequestConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }
}

fn http_client(
    config: &RequestConfig,
    max_idle_per_host: usize,
    idle_timeout: Duration,
) -> Result<reqwest::Client, ClientError> {
    let idle_timeout = (!idle_timeout.is_zero()).then_some(idle_timeout);
    Ok(reqwest::Client::builder()
        .default_headers(default_headers(config)?)
        .tcp_nodelay(true)
        .pool_max_idle_per_host(max_idle_per_host)
        .pool_idle_timeout(idle_timeout)
        .build()?)
}

fn default_headers(config: &RequestConfig) -> Result<HeaderMap, ClientError> {
    let invalid = |name: &str, reason: String| ClientError::InvalidHeader {
        name: name.to_string(),
        reason,
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(key) = &config.api_key {
        let value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|e| invalid("authorization", e.to_string()))?;
        headers.insert(AUTHORIZATION, value);
    }
    for (name, value) in &config.headers {
        let header_name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(name, e.to_string()))?;
        let header_value =
            HeaderValue::from_str(value).map_err(|e| invalid(name, e.to_string()))?;
        headers.insert(header_name, header_value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::config::Endpoint;

    #[test]
    fn invalid_headers_are_refused() {
        let mut config = RequestConfig::new(Endpoint::Chat, "http://127.0.0.1:1", "m");
        config.headers.push(("bad name".into(), "v".into()));
        assert!(matches!(
            Client::new(config),
            Err(ClientError::InvalidHeader { .. })
        ));
    }
}
