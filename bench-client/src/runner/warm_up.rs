//! The warm-up requests every run sends before its `t = 0`, outside its records.

use std::time::Instant;

use futures_util::StreamExt;

use super::config::RunConfig;
use crate::client::{Client, RunClock};
use crate::record::RequestRecord;
use crate::workload::RequestSpec;

/// Sends the warm-up requests (as many at once as the concurrency limit allows) and waits for
/// them; returns how many failed.
pub(super) async fn warm_up(client: &Client, specs: &[RequestSpec], config: &RunConfig) -> usize {
    let num_warmups = config.num_warmups;
    if num_warmups == 0 || specs.is_empty() {
        return 0;
    }
    let clock = RunClock {
        start: Instant::now(),
    };
    let concurrency = config
        .max_concurrency
        .unwrap_or(num_warmups)
        .min(num_warmups);
    let tokenizer = config.tokenizer.as_deref();
    let records: Vec<RequestRecord> = futures_util::stream::iter(0..num_warmups)
        .map(|k| client.send(k, &specs[k % specs.len()], 0.0, clock, tokenizer))
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let failed: Vec<&RequestRecord> = records.iter().filter(|r| !r.is_success()).collect();
    if let Some(first) = failed.first() {
        tracing::warn!(
            "{} of {num_warmups} warm-up requests failed; first: {:?} {}",
            failed.len(),
            first.error,
            first.error_message.as_deref().unwrap_or("")
        );
    }
    failed.len()
}
