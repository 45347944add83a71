//! The per-connection service: hands each request to the router and tells the connection's
//! clock when the request starts and when its response body has been sent. On a probe
//! connection (taken past `--max-connections`) only health, metrics and version are served.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use tower::ServiceExt;

use super::clock::{ConnectionClock, InFlight};
use crate::openai::error::ApiError;
use crate::routes::OPEN_PATHS;

/// Serves one connection's requests.
#[derive(Debug, Clone)]
pub struct ConnectionService {
    pub app: Router,
    pub clock: Arc<ConnectionClock>,
    pub probe_only: bool,
    /// `--root-path`: a prefix taken off request paths that carry it.
    pub root_path: Option<Arc<str>>,
}

impl hyper::service::Service<Request<Incoming>> for ConnectionService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        let in_flight = self.clock.start_request();
        if let Some(root) = &self.root_path {
            strip_root_path(&mut request, root);
        }
        if self.probe_only && !OPEN_PATHS.contains(&request.uri().path()) {
            let response = at_connection_limit().into_response();
            return Box::pin(std::future::ready(Ok(track(response, in_flight))));
        }
        let app = self.app.clone();
        let request = request.map(Body::new);
        Box::pin(async move {
            let response = match app.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(track(response, in_flight))
        })
    }
}

/// `/root/v1/models` → `/v1/models` (`/root` → `/`), the query kept; other paths as they are
/// (a proxy that strips the prefix itself works as well).
fn strip_root_path<B>(request: &mut Request<B>, root: &str) {
    let path = request.uri().path();
    let rest = match path.strip_prefix(root) {
        Some("") => "/",
        Some(rest) if rest.starts_with('/') => rest,
        _ => return,
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_string(),
    };
    let mut parts = request.uri().clone().into_parts();
    match path_and_query.parse() {
        Ok(parsed) => parts.path_and_query = Some(parsed),
        Err(_) => return,
    }
    if let Ok(uri) = axum::http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
}

/// 503 for a request that is not a probe on a connection past `--max-connections`.
pub fn at_connection_limit() -> ApiError {
    ApiError {
        retry_after_s: Some(1),
        code: Some("connection_limit"),
        ..ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is at its connection limit (--max-connections): every connection has a \
             request in flight; retry later",
        )
    }
}

fn track(response: Response, in_flight: InFlight) -> Response {
    response.map(|inner| {
        Body::new(InFlightBody {
            inner,
            _in_flight: in_flight,
        })
    })
}

/// A response body that keeps its request counted as in flight until it ends or is dropped.
struct InFlightBody {
    inner: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for InFlightBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripped(uri: &str, root: &str) -> String {
        let mut request = Request::builder().uri(uri).body(()).expect("request");
        strip_root_path(&mut request, root);
        request.uri().to_string()
    }

    #[test]
    fn the_root_path_comes_off_paths_that_carry_it() {
        assert_eq!(stripped("/llm/v1/models", "/llm"), "/v1/models");
        assert_eq!(stripped("/llm/v1/models?x=1", "/llm"), "/v1/models?x=1");
        assert_eq!(stripped("/llm", "/llm"), "/");
        assert_eq!(stripped("/v1/models", "/llm"), "/v1/models");
        assert_eq!(stripped("/llmx/v1/models", "/llm"), "/llmx/v1/models");
        assert_eq!(stripped("/a/b/health", "/a/b"), "/health");
    }
}
