//! Where and how a run's requests are sent: the [`Endpoint`], the [`Sampling`] fields and the
//! whole [`RequestConfig`]; plus [`normalize_base_url`], which every URL built from a base URL
//! goes through.

use std::time::Duration;

use super::access::ServerAccess;
use super::cancellation::Cancellation;
pub use super::endpoint::Endpoint;
use super::structured_output::StructuredOutput;

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
    /// The run's model; a request that names its own (a LoRA adapter) sends that instead.
    pub model: String,
    /// The API key, extra headers and TLS trust every request carries.
    pub access: ServerAccess,
    pub sampling: Sampling,
    /// A JSON schema, JSON mode or tools sent with every request (before `extra_body`, whose
    /// keys win).
    pub structured_output: StructuredOutput,
    /// The whole request, from send to the last byte; past it the record is a `Timeout`.
    pub timeout: Duration,
    /// Written into every record (`merge` combines the records of several client processes).
    pub client_id: usize,
    /// How long an idle keep-alive connection stays in the pool; zero keeps none (every request
    /// opens its own connection). Default [`DEFAULT_POOL_IDLE_TIMEOUT`].
    pub pool_idle_timeout: Duration,
    /// Keep each request's generated text in its record (for the result's `generated_texts`).
    pub keep_generated_text: bool,
    /// Request `i` is sent with `x-request-id: {prefix}{i}` (`--request-id-prefix`, as vLLM's
    /// client), so that a server's own records can be matched to the client's; `None`: no id.
    pub request_id_prefix: Option<String>,
    /// Requests the client cancels on purpose (`--request-cancellation-rate`); `None`: none.
    /// Conversation turns are never cancelled (the conversation would lose its history).
    pub cancellation: Option<Cancellation>,
}

/// Below the 5 s after which llama.cpp's server (cpp-httplib) and uvicorn (vLLM, SGLang) close
/// an idle keep-alive connection, so the client drops a connection before the server does.
pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

impl RequestConfig {
    pub fn new(endpoint: Endpoint, base_url: &str, model: &str) -> Self {
        Self {
            endpoint,
            base_url: base_url.to_string(),
            model: model.to_string(),
            access: ServerAccess::default(),
            sampling: Sampling::default(),
            structured_output: StructuredOutput::Unconstrained,
            timeout: Duration::from_secs(600),
            client_id: 0,
            pool_idle_timeout: DEFAULT_POOL_IDLE_TIMEOUT,
            keep_generated_text: false,
            request_id_prefix: None,
            cancellation: None,
        }
    }
}

/// `http://host:port/v1/` → `http://host:port`.
pub fn normalize_base_url(base_url: &str) -> &str {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
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
}
