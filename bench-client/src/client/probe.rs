//! Questions asked of a server before a run: is it up, and what model does it serve.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use super::access::ServerAccess;
use super::config::normalize_base_url;
use super::error::ClientError;
use super::openai::{error_body_message, ModelList};
use super::request::error_chain;
use super::stream::clip;

/// How often a server that is not up yet is asked again.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// The longest one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Waits until the server answers 200 on `GET /v1/models` (with the API key and headers) or,
/// for servers without it, `GET /health`; polls every 250 ms for up to `timeout`. A 401 or 403
/// fails at once (a wrong key does not fix itself).
pub async fn readiness_check(
    base_url: &str,
    access: &ServerAccess,
    timeout: Duration,
) -> Result<(), ClientError> {
    let base = normalize_base_url(base_url);
    let http = probe_client(access)?;
    let started = Instant::now();
    let deadline = started + timeout;
    let models_url = format!("{base}/v1/models");
    let health_url = format!("{base}/health");
    loop {
        let last_error = match get(&http, &models_url).await {
            Ok((status, _)) if status.is_success() => return Ok(()),
            Ok((status, body))
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN =>
            {
                return Err(status_error(&models_url, status, &body));
            }
            Ok((status, _)) => match get(&http, &health_url).await {
                Ok((health, _)) if health.is_success() => return Ok(()),
                Ok((health, _)) => format!("/v1/models: {status}, /health: {health}"),
                Err(e) => format!("/v1/models: {status}, /health: {e}"),
            },
            Err(e) => e,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(ClientError::NotReady {
                url: base.to_string(),
                waited_s: (now - started).as_secs_f64(),
                last_error,
            });
        }
        tokio::time::sleep(POLL_INTERVAL.min(deadline - now)).await;
    }
}

/// The first model id of `GET /v1/models`.
pub async fn discover_model(base_url: &str, access: &ServerAccess) -> Result<String, ClientError> {
    let url = format!("{}/v1/models", normalize_base_url(base_url));
    let http = probe_client(access)?;
    let (status, body) = get(&http, &url)
        .await
        .map_err(|message| ClientError::BadResponse {
            url: url.clone(),
            message,
        })?;
    if !status.is_success() {
        return Err(status_error(&url, status, &body));
    }
    let bad = |message: String| ClientError::BadResponse {
        url: url.clone(),
        message,
    };
    let models: ModelList =
        serde_json::from_str(&body).map_err(|e| bad(format!("{e}: {}", clip(&body))))?;
    models
        .data
        .into_iter()
        .next()
        .map(|card| card.id)
        .ok_or_else(|| bad("no models listed".into()))
}

fn probe_client(access: &ServerAccess) -> Result<reqwest::Client, ClientError> {
    Ok(access
        .client_builder()
        .default_headers(access.header_map()?)
        .timeout(PROBE_TIMEOUT)
        .build()?)
}

/// `GET url`: the status and body, or the transport error as text.
async fn get(http: &reqwest::Client, url: &str) -> Result<(StatusCode, String), String> {
    let response = http.get(url).send().await.map_err(|e| error_chain(&e))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| error_chain(&e))?;
    Ok((status, body))
}

fn status_error(url: &str, status: StatusCode, body: &str) -> ClientError {
    ClientError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        message: error_body_message(body).unwrap_or_else(|| clip(body)),
    }
}
