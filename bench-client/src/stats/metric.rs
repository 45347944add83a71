//! The latency metrics, their names (vLLM's where vLLM has the metric) and their samples.

use serde::{Deserialize, Serialize};

use super::error::StatsError;
use super::itl::{chunk_gaps_s, per_token_itls_s};
use crate::record::RequestRecord;

/// A latency metric. Samples come from successful requests only; see [`super::DEFINITIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Metric {
    /// Time to first token: first content chunk − send.
    #[serde(rename = "ttft")]
    Ttft,
    /// Time per output token: (E2EL − TTFT) / (output tokens − 1), for more than one token.
    #[serde(rename = "tpot")]
    Tpot,
    /// Inter-token latency as vLLM measures it: one sample per gap between content chunks.
    /// Named `itl` so that vLLM's keys keep vLLM's meaning.
    #[serde(rename = "itl")]
    ItlPerChunk,
    /// Inter-token latency per token: each chunk gap divided among the tokens it carried.
    #[serde(rename = "itl_per_token")]
    ItlPerToken,
    /// End-to-end latency: end − send.
    #[serde(rename = "e2el")]
    E2el,
    /// Time to second token: second content chunk − send.
    #[serde(rename = "ttst")]
    TimeToSecondToken,
    /// Time the request waited in the client: actual − target send (vLLM's
    /// `client_queue_time`; with `--max-concurrency` mostly the wait for a free slot).
    #[serde(rename = "client_queue_time")]
    ClientQueueTime,
    /// End-to-end latency from the target send time: end − target send.
    #[serde(rename = "e2el_including_client_queue")]
    E2elIncludingClientQueue,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Ttft,
        Metric::Tpot,
        Metric::ItlPerChunk,
        Metric::ItlPerToken,
        Metric::E2el,
        Metric::TimeToSecondToken,
        Metric::ClientQueueTime,
        Metric::E2elIncludingClientQueue,
    ];

    /// `vllm bench serve`'s default `--percentile-metrics` for generation.
    pub const VLLM_DEFAULT: [Metric; 3] = [Metric::Ttft, Metric::Tpot, Metric::ItlPerChunk];

    /// The name used on the command line and in JSON keys (`mean_{name}_ms`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::ItlPerChunk => "itl",
            Metric::ItlPerToken => "itl_per_token",
            Metric::E2el => "e2el",
            Metric::TimeToSecondToken => "ttst",
            Metric::ClientQueueTime => "client_queue_time",
            Metric::E2elIncludingClientQueue => "e2el_including_client_queue",
        }
    }

    /// The label a report shows.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Tpot => "TPOT",
            Metric::ItlPerChunk => "ITL (per chunk)",
            Metric::ItlPerToken => "ITL (per token)",
            Metric::E2el => "E2EL",
            Metric::TimeToSecondToken => "Time to second token",
            Metric::ClientQueueTime => "Client queue time",
            Metric::E2elIncludingClientQueue => "E2EL incl. client queue",
        }
    }

    pub fn parse(name: &str) -> Result<Metric, StatsError> {
        let name = name.trim();
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| StatsError::UnknownMetric {
                name: name.to_string(),
                expected: Metric::names_list(),
            })
    }

    fn names_list() -> String {
        Metric::ALL.map(Metric::name).join(", ")
    }

    /// Whether a request has one value of this metric (every metric but the ITLs), so that it
    /// can be a goodput SLO.
    pub fn is_per_request(self) -> bool {
        !matches!(self, Metric::ItlPerChunk | Metric::ItlPerToken)
    }

    /// The metric's value for one request in seconds, for per-request metrics; `None` for the
    /// ITLs and where the request does not define it (no first token, one output token, …).
    pub fn request_value_s(self, record: &RequestRecord) -> Option<f64> {
        match self {
            Metric::Ttft => record.ttft_s(),
            Metric::Tpot => tpot_s(record),
            Metric::E2el => Some(record.e2el_s()),
            Metric::TimeToSecondToken => record
                .chunk_times_s
                .get(1)
                .map(|t| t - record.actual_send_s),
            Metric::ClientQueueTime => Some(record.actual_send_s - record.target_send_s),
            Metric::E2elIncludingClientQueue => Some(record.end_s - record.target_send_s),
            Metric::ItlPerChunk | Metric::ItlPerToken => None,
        }
    }

    /// Appends this metric's samples (seconds) of one request to `out`.
    pub fn push_samples_s(self, record: &RequestRecord, out: &mut Vec<f64>) {
        match self {
            Metric::ItlPerChunk => out.extend(chunk_gaps_s(record)),
            Metric::ItlPerToken => out.extend(per_token_itls_s(record)),
            _ => out.extend(self.request_value_s(record)),
        }
    }

    /// This metric's samples over the successful requests among `records`.
    pub fn samples_s<'a>(self, records: impl IntoIterator<Item = &'a RequestRecord>) -> Vec<f64> {
        let mut samples = Vec::new();
        for record in records.into_iter().filter(|r| r.is_success()) {
            self.push_samples_s(record, &mut samples);
        }
        samples
    }
}

/// vLLM's TPOT: the time after the first token, per token after the first.
fn tpot_s(record: &RequestRecord) -> Option<f64> {
    let ttft_s = record.ttft_s()?;
    (record.output_tokens > 1)
        .then(|| (record.e2el_s() - ttft_s) / (record.output_tokens - 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::streamed;

    #[test]
    fn names_round_trip_and_match_serde() {
        for metric in Metric::ALL {
            assert_eq!(Metric::parse(metric.name()).ok(), Some(metric));
            let json = serde_json::to_value(metric).expect("serializes");
            assert_eq!(json, serde_json::Value::String(metric.name().into()));
        }
        assert!(Metric::parse("latency").is_err());
        assert_eq!(Metric::parse(" itl ").ok(), Some(Metric::ItlPerChunk));
    }

    #[test]
    fn per_request_values_on_a_hand_built_record() {
        // Due at 1.0, sent at 1.25; chunks at 1.5, 1.75, 2.25; ends at 2.5; 5 tokens.
        let record = streamed(0, 1.0, 1.25, &[1.5, 1.75, 2.25], 2.5, 5);
        let value = |m: Metric| m.request_value_s(&record);
        assert_eq!(value(Metric::Ttft), Some(0.25));
        assert_eq!(value(Metric::Tpot), Some((1.25 - 0.25) / 4.0));
        assert_eq!(value(Metric::E2el), Some(1.25));
        assert_eq!(value(Metric::TimeToSecondToken), Some(0.5));
        assert_eq!(value(Metric::ClientQueueTime), Some(0.25));
        assert_eq!(value(Metric::E2elIncludingClientQueue), Some(1.5));
        assert_eq!(value(Metric::ItlPerChunk), None);
    }

    #[test]
    fn tpot_needs_two_tokens_and_ttst_two_chunks() {
        let one_token = streamed(0, 0.0, 0.0, &[0.5], 0.75, 1);
        assert_eq!(Metric::Tpot.request_value_s(&one_token), None);
        assert_eq!(Metric::TimeToSecondToken.request_value_s(&one_token), None);
        assert_eq!(Metric::Ttft.request_value_s(&one_token), Some(0.5));
    }

    #[test]
    fn samples_skip_failed_requests() {
        let ok = streamed(0, 0.0, 0.0, &[0.5, 0.75], 1.0, 2);
        let mut failed = streamed(1, 0.0, 0.0, &[0.25], 0.5, 1);
        failed.error = Some(crate::record::ErrorKind::Stream);
        assert_eq!(Metric::Ttft.samples_s([&ok, &failed]), vec![0.5]);
        assert_eq!(Metric::ItlPerChunk.samples_s([&ok, &failed]), vec![0.25]);
    }
}
