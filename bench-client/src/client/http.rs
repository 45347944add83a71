//! [`Client`]: the HTTP client of one [`RequestConfig`], its default headers set once and its
//! connection pool shared by every clone. Sending a request is in `request`.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE};

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
    let mut headers = config.access.header_map()?;
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(config
        .access
        .client_builder()
        .default_headers(headers)
        .tcp_nodelay(true)
        .pool_max_idle_per_host(max_idle_per_host)
        .pool_idle_timeout(idle_timeout)
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::config::Endpoint;

    #[test]
    fn invalid_headers_are_refused() {
        let mut config = RequestConfig::new(Endpoint::Chat, "http://127.0.0.1:1", "m");
        config.access.headers.push(("bad name".into(), "v".into()));
        assert!(matches!(
            Client::new(config),
            Err(ClientError::InvalidHeader { .. })
        ));
    }
}
