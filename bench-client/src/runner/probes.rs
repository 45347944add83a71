//! Probe requests (`--probe-request-rate`, vLLM's): one-token requests ("Hi", `max_tokens: 1`,
//! no schema, the run's base model) sent at a fixed rate beside the workload and outside
//! `--max-concurrency`, reported apart from it: how long the workload makes an unrelated,
//! tiny request wait — the stall a user of a busy deployment feels.
//!
//! Unlike vLLM's loop (send, wait for the answer, sleep), probes keep an open-loop schedule,
//! probe `k` due at `k / rate`: a stalled probe does not delay the next, so a stall shows in
//! every probe it holds up instead of hiding them.

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::client::{Client, ClientError, RequestConfig, RunClock, StructuredOutput};
use crate::record::RequestRecord;
use crate::stats::{median, percentile};
use crate::workload::RequestSpec;

/// How the probes of a run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub rate_per_s: f64,
    pub num_completed: usize,
    pub num_failed: usize,
    /// End-to-end latency of the completed probes (send → last byte), ms; `None` when none
    /// completed.
    pub median_e2el_ms: Option<f64>,
    pub p99_e2el_ms: Option<f64>,
    pub max_e2el_ms: Option<f64>,
}

impl ProbeSummary {
    pub fn of(rate_per_s: f64, records: &[RequestRecord]) -> Self {
        let mut e2els_ms: Vec<f64> = records
            .iter()
            .filter(|record| record.is_success())
            .map(|record| record.e2el_s() * 1000.0)
            .collect();
        e2els_ms.sort_by(f64::total_cmp);
        Self {
            rate_per_s,
            num_completed: e2els_ms.len(),
            num_failed: records.len() - e2els_ms.len(),
            median_e2el_ms: median(&e2els_ms),
            p99_e2el_ms: percentile(&e2els_ms, 99.0),
            max_e2el_ms: e2els_ms.last().copied(),
        }
    }

    /// The report's section, in `vllm bench serve`'s layout.
    pub fn render(&self) -> String {
        let ms = |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{v:.2}"));
        let rows = [
            (
                "Probe request rate (req/s):",
                format!("{:.2}", self.rate_per_s),
            ),
            ("Probe requests completed:", self.num_completed.to_string()),
            ("Probe requests failed:", self.num_failed.to_string()),
            ("Median probe E2EL (ms):", ms(self.median_e2el_ms)),
            ("P99 probe E2EL (ms):", ms(self.p99_e2el_ms)),
            ("Max probe E2EL (ms):", ms(self.max_e2el_ms)),
        ];
        let mut text = format!("{:-^50}\n", "Probe Requests");
        for (label, value) in rows {
            text.push_str(&format!("{label:<40} {value}\n"));
        }
        text.trim_end().to_string()
    }
}

/// The probes' own client: the run's server, key and headers, but no schema or tools, and ids
/// `{prefix}probe-{k}` apart from the workload's.
pub(super) fn probe_client(request: &RequestConfig) -> Result<Client, ClientError> {
    let mut config = request.clone();
    config.structured_output = StructuredOutput::Unconstrained;
    config.cancellation = None;
    config.keep_generated_text = false;
    config.request_id_prefix = config
        .request_id_prefix
        .map(|prefix| format!("{prefix}probe-"));
    Client::new(config)
}

/// Sends probe `k` at `k / rate_per_s` until `stop` changes (or its sender drops), then waits
/// for the probes in flight; their records.
pub(super) async fn send_probes(
    client: Client,
    clock: RunClock,
    rate_per_s: f64,
    mut stop: watch::Receiver<()>,
) -> Vec<RequestRecord> {
    let spec = RequestSpec::text("Hi", 1, 1);
    let mut in_flight = JoinSet::new();
    for index in 0usize.. {
        let due_s = index as f64 / rate_per_s;
        let due = clock.start + std::time::Duration::from_secs_f64(due_s);
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = stop.changed() => break,
        }
        let (client, spec) = (client.clone(), spec.clone());
        in_flight.spawn(async move { client.send(index, &spec, due_s, clock, None).await });
    }
    let mut records = Vec::with_capacity(in_flight.len());
    while let Some(joined) = in_flight.join_next().await {
        if let Ok(record) = joined {
            records.push(record);
        }
    }
    records.sort_by_key(|record| record.index);
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;
    use crate::stats::test_records::{failed, streamed};

    fn record(e2el_s: f64, is_failed: bool) -> RequestRecord {
        match is_failed {
            true => failed(0, 1.0, 1.0 + e2el_s, ErrorKind::Http(503)),
            false => streamed(0, 1.0, 1.0, &[1.0 + e2el_s], 1.0 + e2el_s, 1),
        }
    }

    #[test]
    fn only_completed_probes_count_toward_the_latencies() {
        let records: Vec<RequestRecord> = [0.010, 0.030, 0.020, 5.0]
            .iter()
            .enumerate()
            .map(|(i, &e2el)| record(e2el, i == 3))
            .collect();
        let summary = ProbeSummary::of(2.0, &records);
        assert_eq!((summary.num_completed, summary.num_failed), (3, 1));
        let close = |a: Option<f64>, b: f64| (a.expect("a value") - b).abs() < 1e-9;
        assert!(close(summary.median_e2el_ms, 20.0), "{summary:?}");
        assert!(close(summary.max_e2el_ms, 30.0), "{summary:?}");
        assert!(close(summary.p99_e2el_ms, 29.8), "{summary:?}");
        let text = summary.render();
        assert!(text.contains("Probe requests failed:"), "{text}");
        let none = ProbeSummary::of(1.0, &[]);
        assert_eq!(none.median_e2el_ms, None);
        assert!(none.render().contains("Median probe E2EL (ms):"));
    }
}
