//! One OpenAI-compatible streaming request in, one [`RequestRecord`](crate::record::RequestRecord)
//! out; plus the two questions asked of a server before a run: is it ready
//! ([`readiness_check`]) and what does it serve ([`discover_model`]).
//!
//! - [`openai`]: the wire types (the client's own copy).
//! - [`sse`]: the incremental Server-Sent Events decoder.
//! - [`stream`]: one response's chunks → arrival times, usage, text.
//! - `request`: [`Client::send`], the HTTP exchange and its timing.
//! - `probe`: readiness and model discovery.
//!
//! HTTP/1.1 only (reqwest without `http2`), plain `http://` (no TLS backend), as `vllm bench
//! serve` and guidellm talk to a server: one connection per in-flight stream.

pub mod openai;
mod probe;
mod request;
pub mod sse;
pub mod stream;

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde::{Deserialize, Serialize};

pub use probe::{discover_model, readiness_check};
pub use stream::TokenCounter;

/// Which OpenAI endpoint requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/chat/completions`, the prompt sent as `messages`.
    #[default]
    Chat,
    /// `/v1/completions`, the prompt sent as text.
    Completions,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
        }
    }
}

/// Sampling fields of every request.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// `None` leaves it to the server. Default 0 (greedy), as `vllm bench serve` sends.
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Send `ignore_eos: true` so every request generates exactly `max_tokens` (vLLM, SGLang and
    /// pagoda know it; OpenAI rejects it, so turn it off there). Default on: fixed-length
    /// workloads are what benchmarks compare.
    pub ignore_eos: bool,
    /// Merged last into the body's top level (`--extra-body`): its keys win.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: Some(0.0),
            top_p: None,
            ignore_eos: true,
            extra_body: serde_json::Map::new(),
        }
    }
}

/// Where and how every request of a run is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestConfig {
    pub endpoint: Endpoint,
    /// `http://host:port` (a trailing `/` or `/v1` is dropped).
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer KEY`.
    pub api_key: Option<String>,
    /// Extra headers, sent with every request.
    pub headers: Vec<(String, String)>,
    pub sampling: Sampling,
    /// The whole request, from send to the last byte; past it the record is a `Timeout`.
    pub timeout: Duration,
    /// Written into every record (`merge` combines the records of several client processes).
    pub client_id: usize,
}

impl RequestConfig {
    pub fn new(endpoint: Endpoint, base_url: &str, model: &str) -> Self {
        Self {
            endpoint,
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key: None,
            headers: Vec::new(),
            sampling: Sampling::default(),
            timeout: Duration::from_secs(600),
            client_id: 0,
        }
    }
}

/// Errors of building a client and of the probes (a request's own failures are recorded in its
/// [`RequestRecord`](crate::record::RequestRecord), never returned).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid header {name:?}: {reason}")]
    InvalidHeader { name: String, reason: String },
    #[error("HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("{url} answered {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url} answered something unexpected: {message}")]
    BadResponse { url: String, message: String },
    #[error("the server at {url} was not ready after {waited_s:.1} s (last: {last_error})")]
    NotReady {
        url: String,
        waited_s: f64,
        last_error: String,
    },
}

/// The run's clock: seconds since `start` (`t = 0`), negative before it (warm-ups).
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    pub start: Instant,
}

impl RunClock {
    pub fn secs(&self, at: Instant) -> f64 {
        match at.checked_duration_since(self.start) {
            Some(after) => after.as_secs_f64(),
            None => -(self.start - at).as_secs_f64(),
        }
    }

    pub fn now_s(&self) -> f64 {
        self.secs(Instant::now())
    }
}

/// Sends requests of one configuration; cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
    config: std::sync::Arc<RequestConfig>,
}

impl Client {
    /// Builds the HTTP client: headers set once, TCP_NODELAY on (reqwest's default, set here
    /// explicitly), and no cap on idle connections per host (`pool_max_idle_per_host`), so every
    /// connection a burst opened is kept for the next burst instead of being reopened.
    pub fn new(config: RequestConfig) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .default_headers(default_headers(&config)?)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(usize::MAX)
            .pool_idle_timeout(Duration::from_secs(90))
            .build()?;
        let url = format!(
            "{}{}",
            normalize_base_url(&config.base_url),
            config.endpoint.path()
        );
        Ok(Self {
            http,
            url,
            config: std::sync::Arc::new(config),
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

/// `http://host:port/v1/` → `http://host:port`.
pub fn normalize_base_url(base_url: &str) -> &str {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
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

    #[test]
    fn base_url_normalisation() {
        assert_eq!(normalize_base_url("http://h:1"), "http://h:1");
        assert_eq!(normalize_base_url("http://h:1/"), "http://h:1");
        assert_eq!(normalize_base_url("http://h:1/v1/"), "http://h:1");
    }

    #[test]
    fn invalid_headers_are_refused() {
        let mut config = RequestConfig::new(Endpoint::Chat, "http://127.0.0.1:1", "m");
        config.headers.push(("bad name".into(), "v".into()));
        assert!(matches!(
            Client::new(config),
            Err(ClientError::InvalidHeader { .. })
        ));
    }

    #[test]
    fn clock_is_signed() {
        let clock = RunClock {
            start: Instant::now() + Duration::from_secs(1),
        };
        assert!(clock.now_s() < -0.5);
        assert!((clock.secs(clock.start + Duration::from_millis(250)) - 0.25).abs() < 1e-9);
    }
}
