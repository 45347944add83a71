//! The client's own lateness under a concurrency limit: a request (or a conversation) due while
//! every slot was taken waited for a slot on the server's account, not the client's; only what
//! came after its slot was free counts.

use crate::record::RequestRecord;

/// What held a concurrency slot: due at `target_send_s`, holding a slot from `actual_send_s`
/// to `end_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SlotSpan {
    pub target_send_s: f64,
    pub actual_send_s: f64,
    pub end_s: f64,
}

impl SlotSpan {
    pub fn of(record: &RequestRecord) -> Self {
        Self {
            target_send_s: record.target_send_s,
            actual_send_s: record.actual_send_s,
            end_s: record.end_s,
        }
    }
}

/// Client lags of what held a concurrency slot from its send to its end, due at its target.
pub(super) fn slot_client_lags_s(spans: &[SlotSpan], limit: usize) -> Vec<f64> {
    // Ends before sends at the same instant: a freed slot is free for a send at that instant.
    let mut events: Vec<(f64, i8, usize)> = spans
        .iter()
        .enumerate()
        .flat_map(|(i, r)| [(r.actual_send_s, 1, i), (r.end_s, -1, i)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut level, mut free_since_s) = (0usize, f64::NEG_INFINITY);
    let mut lags_s = Vec::with_capacity(spans.len());
    for (t, delta, i) in events {
        if delta < 0 {
            if level == limit {
                free_since_s = t;
            }
            level = level.saturating_sub(1);
            continue;
        }
        let span = &spans[i];
        // At or over the limit (clients of a merged run with uneven limits): nothing waited
        // on the client's account.
        let lag_s = if level < limit {
            span.actual_send_s - span.target_send_s.max(free_since_s)
        } else {
            0.0
        };
        lags_s.push(lag_s.max(0.0));
        level += 1;
    }
    lags_s
}
