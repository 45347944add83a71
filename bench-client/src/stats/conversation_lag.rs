//! The client's own lateness in a conversation run under `--max-concurrency`, which counts
//! conversations: a conversation holds its slot from its first turn's send to its last turn's
//! end, thinking included. So a first turn's lag is what came after a conversation's slot was
//! free (the slot sweep of `slot_lag` over conversations), and a later turn's is its send lag
//! (its target is already when it became due: the previous turn's end plus the think time).

use std::collections::BTreeMap;

use super::slot_lag::{slot_client_lags_s, SlotSpan};
use crate::record::RequestRecord;

/// Each record's client lag, in seconds, in no particular order.
pub(super) fn conversation_client_lags_s(records: &[RequestRecord], limit: usize) -> Vec<f64> {
    // Per (client, conversation): its first turn's span, stretched to its last turn's end.
    let mut conversations: BTreeMap<(usize, usize), (Option<SlotSpan>, f64)> = BTreeMap::new();
    let mut independent: Vec<SlotSpan> = Vec::new();
    let mut lags_s = Vec::with_capacity(records.len());
    for record in records {
        let Some((id, turn)) = record.conversation else {
            independent.push(SlotSpan::of(record));
            continue;
        };
        let (first, end_s) = conversations
            .entry((record.client_id, id))
            .or_insert((None, f64::NEG_INFINITY));
        *end_s = end_s.max(record.end_s);
        if turn == 0 {
            *first = Some(SlotSpan::of(record));
        } else {
            lags_s.push(record.send_lag_s());
        }
    }
    let spans = conversations.into_values().filter_map(|(first, end_s)| {
        first.map(|span| SlotSpan {
            end_s: end_s.max(span.end_s),
            ..span
        })
    });
    independent.extend(spans);
    lags_s.extend(slot_client_lags_s(&independent, limit));
    lags_s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::streamed;

    /// Turn `turn` of conversation `id`: due at `target_s`, sent at `send_s`, ended at `end_s`.
    fn turn(id: usize, turn: usize, target_s: f64, send_s: f64, end_s: f64) -> RequestRecord {
        let mut record = streamed(0, target_s, send_s, &[end_s], end_s, 1);
        record.conversation = Some((id, turn));
        record
    }

    #[test]
    fn a_first_turn_waiting_for_a_thinking_conversation_is_not_late() {
        // One slot. Conversation 0: turns at 0–1 s and (after 1 s of thinking) 2–3 s.
        // Conversation 1, due at 0, waits for the slot until 3 s and is sent 2 ms later.
        let records = [
            turn(0, 0, 0.0, 0.0, 1.0),
            turn(0, 1, 2.0, 2.001, 3.0),
            turn(1, 0, 0.0, 3.002, 4.0),
        ];
        let mut lags_ms: Vec<f64> = conversation_client_lags_s(&records, 1)
            .iter()
            .map(|s| (s * 1e3 * 1e6).round() / 1e6)
            .collect();
        lags_ms.sort_by(f64::total_cmp);
        assert_eq!(lags_ms, [0.0, 1.0, 2.0]);
    }
}
