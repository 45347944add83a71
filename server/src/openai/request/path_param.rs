//! A route's one path parameter (`{id}`, `{*model}`), read as axum's `Path<String>` but refused
//! as an OpenAI JSON error (axum's own rejection is plain text), e.g. for a `%FF` that is not
//! UTF-8.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;

use crate::openai::error::ApiError;

/// The decoded path parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathParam(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(ApiError::invalid(
                "path",
                format!("bad path: {}", rejection.body_text()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    async fn echo(PathParam(id): PathParam) -> String {
        id
    }

    async fn call(uri: &str) -> (StatusCode, String, Option<String>) {
        let app = Router::new().route("/items/{id}", get(echo));
        let request = Request::builder()
            .uri(uri)
            .body(Body::empty())
            .expect("a request");
        let response = app.oneshot(request).await.expect("an answer");
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        (
            status,
            String::from_utf8_lossy(&body).into_owned(),
            content_type,
        )
    }

    #[tokio::test]
    async fn a_good_parameter_is_decoded_and_a_bad_one_is_a_json_400() {
        let (status, body, _) = call("/items/resp_%41b").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "resp_Ab"));
        let (status, body, content_type) = call("/items/%FF").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(content_type.as_deref(), Some("application/json"));
        let error: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(error["error"]["param"], "path");
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("UTF-8")),
            "{body}"
        );
    }
}
