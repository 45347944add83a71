//! Steps every run takes: warm-up requests before `t = 0`, the records collected as the
//! requests end, the dispatcher stopped when the run is over, and the wall clock of `t = 0`.

use std::time::Instant;

use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::config::RunConfig;
use super::dispatch::StopFlag;
use crate::client::{Client, RunClock};
use crate::record::RequestRecord;
use crate::workload::RequestSpec;

/// A request's record and the client's own lateness sending it.
#[derive(Debug)]
pub(super) struct Finished {
    pub record: RequestRecord,
    pub client_lag_s: f64,
}

/// Receives records until every sender is gone; returns them by index, with the client lags.
pub(super) async fn collect(
    records_rx: &mut mpsc::UnboundedReceiver<Finished>,
    capacity: usize,
) -> (Vec<RequestRecord>, Vec<f64>) {
    let mut records = Vec::with_capacity(capacity);
    let mut client_lags_s = Vec::with_capacity(capacity);
    while let Some(finished) = records_rx.recv().await {
        records.push(finished.record);
        client_lags_s.push(finished.client_lag_s);
    }
    records.sort_by_key(|r| r.index);
    (records, client_lags_s)
}

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

/// Stops the dispatcher when `run` ends or is dropped.
pub(super) struct StopOnDrop(pub StopFlag);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}
