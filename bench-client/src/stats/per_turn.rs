//! [`TurnSummary`]: a conversation run's statistics per turn index, so that what a growing
//! context costs is visible: turn 0 against turn 4, their prompt lengths and TTFTs (where a
//! prefix cache serves the history again, TTFT grows far slower than the prompt).
//!
//! Over the records that carry a `conversation` (closed-loop conversation runs), grouped by turn
//! index. Prompt tokens and latencies are over each turn's successful requests, as the run's
//! are.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metric::Metric;
use super::percentile::MetricStats;
use crate::record::RequestRecord;

/// The percentile each turn's TTFT is reported at.
pub const PER_TURN_PERCENTILE: f64 = 99.0;

/// The requests of one turn index (`pagoda.turns` in the result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSummary {
    /// From 0.
    pub turn: usize,
    /// Sent, failed ones included.
    pub num_requests: usize,
    pub num_completed: usize,
    /// Prompt tokens (the server's count: the whole history) of the successful requests.
    pub mean_input_tokens: f64,
    /// `None` without a successful request with a first token.
    pub mean_ttft_ms: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub mean_e2el_ms: Option<f64>,
}

/// One [`TurnSummary`] per turn index among `records`, by index; empty when no record is a turn
/// of a conversation.
pub(super) fn per_turn(records: &[RequestRecord]) -> Vec<TurnSummary> {
    let mut by_turn: BTreeMap<usize, Vec<&RequestRecord>> = BTreeMap::new();
    for record in records {
        if let Some((_, turn)) = record.conversation {
            by_turn.entry(turn).or_default().push(record);
        }
    }
    by_turn
        .into_iter()
        .map(|(turn, records)| summarize_turn(turn, &records))
        .collect()
}

fn summarize_turn(turn: usize, records: &[&RequestRecord]) -> TurnSummary {
    let successful: Vec<&RequestRecord> =
        records.iter().copied().filter(|r| r.is_success()).collect();
    let num_completed = successful.len();
    let mut input_tokens: Vec<f64> = successful.iter().map(|r| r.input_tokens as f64).collect();
    input_tokens.sort_by(f64::total_cmp);
    let stats = |metric: Metric| {
        let samples_s = metric.samples_s(records.iter().copied());
        MetricStats::from_samples_s(&samples_s, &[PER_TURN_PERCENTILE])
    };
    let ttft = stats(Metric::Ttft);
    TurnSummary {
        turn,
        num_requests: records.len(),
        num_completed,
        mean_input_tokens: if num_completed == 0 {
            0.0
        } else {
            input_tokens.iter().sum::<f64>() / num_completed as f64
        },
        mean_ttft_ms: ttft.as_ref().map(|s| s.mean_ms),
        median_ttft_ms: ttft.as_ref().map(|s| s.median_ms),
        p99_ttft_ms: ttft
            .as_ref()
            .and_then(|s| s.percentile_ms(PER_TURN_PERCENTILE)),
        mean_e2el_ms: stats(Metric::E2el).map(|s| s.mean_ms),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;
    use crate::stats::test_records::{failed, streamed};

    /// Turn `turn` of conversation `id`, sent at `send_s`, first token `ttft_s` later, ended
    /// 0.5 s after its send, with `input_tokens` prompt tokens.
    fn turn(
        id: usize,
        turn: usize,
        send_s: f64,
        ttft_s: f64,
        input_tokens: usize,
    ) -> RequestRecord {
        let mut record = streamed(0, send_s, send_s, &[send_s + ttft_s], send_s + 0.5, 1);
        record.conversation = Some((id, turn));
        record.input_tokens = input_tokens;
        record
    }

    #[test]
    fn groups_by_turn_index_with_prompt_lengths_and_latencies() {
        let mut lost = failed(9, 1.0, 1.2, ErrorKind::Http(500));
        lost.conversation = Some((2, 1));
        let records = [
            turn(0, 0, 0.0, 0.1, 100),
            turn(1, 0, 0.0, 0.3, 200),
            turn(0, 1, 1.0, 0.05, 400),
            lost,
            streamed(5, 0.0, 0.0, &[0.2], 0.3, 1),
        ];
        let turns = per_turn(&records);
        assert_eq!(turns.len(), 2, "the independent request is left out");
        let first = &turns[0];
        assert_eq!(
            (first.turn, first.num_requests, first.num_completed),
            (0, 2, 2)
        );
        assert!((first.mean_input_tokens - 150.0).abs() < 1e-9);
        assert!((first.mean_ttft_ms.unwrap() - 200.0).abs() < 1e-6);
        assert!((first.median_ttft_ms.unwrap() - 200.0).abs() < 1e-6);
        // numpy's p99 of [100, 300]: 100 + 0.99 · 200.
        assert!((first.p99_ttft_ms.unwrap() - 298.0).abs() < 1e-6);
        assert!((first.mean_e2el_ms.unwrap() - 500.0).abs() < 1e-6);
        let second = &turns[1];
        assert_eq!(
            (second.turn, second.num_requests, second.num_completed),
            (1, 2, 1)
        );
        assert!(
            (second.mean_input_tokens - 400.0).abs() < 1e-9,
            "failed ones left out"
        );
        assert!((second.mean_ttft_ms.unwrap() - 50.0).abs() < 1e-6);
    }

    #[test]
    fn nothing_for_independent_requests() {
        assert!(per_turn(&[streamed(0, 0.0, 0.0, &[0.1], 0.2, 1)]).is_empty());
    }
}
