//! One OpenAI-compatible streaming request in, one [`RequestRecord`](crate::record::RequestRecord)
//! out; plus the two questions asked of a server before a run: is it ready
//! ([`readiness_check`]) and what does it serve ([`discover_model`]).
//!
//! - `config`: [`Endpoint`], [`Sampling`], [`RequestConfig`] and [`normalize_base_url`].
//! - `error`: [`ClientError`].
//! - `clock`: [`RunClock`], the run's monotonic clock.
//! - `http`: [`Client`], the shared HTTP client of one configuration.
//! - [`openai`]: the wire types (the client's own copy).
//! - [`sse`]: the incremental Server-Sent Events decoder.
//! - [`stream`]: one response's chunks → arrival times, usage, text.
//! - `request`: [`Client::send`], the HTTP exchange and its timing.
//! - [`structured_output`]: a JSON schema, JSON mode or tools sent with every request.
//! - `stale`: is a failed send a closed keep-alive connection's (retried once)?
//! - `probe`: readiness and model discovery.
//!
//! - `access`: [`ServerAccess`], the key, headers and TLS trust every exchange carries.
//!
//! HTTP/1.1 only (reqwest without `http2`), as `vllm bench serve` and guidellm talk to a server:
//! one connection per in-flight stream; `http://` or `https://` (rustls, with the system's and
//! Mozilla's roots; `--insecure` accepts any certificate).

mod access;
mod cancellation;
mod clock;
mod config;
mod endpoint;
mod error;
mod http;
pub mod openai;
mod probe;
mod request;
pub mod sse;
mod stale;
pub mod stream;
pub mod structured_output;
#[cfg(test)]
mod test_http;
#[cfg(test)]
mod tls_tests;

pub use access::ServerAccess;
pub use cancellation::Cancellation;
pub use clock::RunClock;
pub use config::{
    normalize_base_url, Endpoint, RequestConfig, Sampling, DEFAULT_POOL_IDLE_TIMEOUT,
};
pub use error::ClientError;
pub use http::Client;
pub use probe::{discover_model, readiness_check};
pub use stream::TokenCounter;
pub use structured_output::{SchemaField, StructuredOutput, ToolChoice};
