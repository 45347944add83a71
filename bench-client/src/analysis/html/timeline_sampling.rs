//! Which requests the per-request timeline draws: one row per request up to
//! [`MAX_TIMELINE_ROWS`]; beyond, every k-th request in send order (k = ⌈n ÷ 300⌉), so the rows
//! keep the run's shape (a slow minute stays a band of long bars) at a readable height.

use crate::record::RequestRecord;

/// The most rows the timeline draws.
pub const MAX_TIMELINE_ROWS: usize = 300;

/// The requests drawn, in order of scheduled send time, and the stride `k` (1: all of them).
pub fn timeline_rows(records: &[RequestRecord]) -> (Vec<&RequestRecord>, usize) {
    let mut ordered: Vec<&RequestRecord> = records.iter().collect();
    ordered.sort_by(|a, b| {
        a.target_send_s
            .total_cmp(&b.target_send_s)
            .then(a.client_id.cmp(&b.client_id))
            .then(a.index.cmp(&b.index))
    });
    let stride = ordered.len().div_ceil(MAX_TIMELINE_ROWS).max(1);
    let rows = ordered.into_iter().step_by(stride).collect();
    (rows, stride)
}
