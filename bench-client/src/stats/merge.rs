//! Merging the records of a distributed run. Each client process saves its records with times
//! relative to its own start and that start as Unix seconds (its run metadata); processes share
//! the wall clock (NTP-synchronised hosts), so shifting every record by its process's start
//! minus the earliest start puts all of them on one timeline. Statistics are then recomputed
//! from the merged records: percentiles cannot be merged from per-client summaries, records can.

use serde::{Deserialize, Serialize};

use super::error::StatsError;
use crate::record::RequestRecord;

/// The records of several clients on one timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedRecords {
    /// The earliest client's start, Unix seconds: `t = 0` of the merged records.
    pub start_unix_s: f64,
    /// Every record, times relative to `start_unix_s`, ordered by (actual send, client, index).
    pub records: Vec<RequestRecord>,
}

/// Merges `(start_unix_s, records)` sets, one per client process. A record keeps its
/// `client_id` and `index` (each process sets its own `client_id`); the same
/// `(client_id, index)` twice is an error, as it means a file was given twice.
pub fn merge(parts: &[(f64, Vec<RequestRecord>)]) -> Result<MergedRecords, StatsError> {
    if let Some(&(bad, _)) = parts.iter().find(|(start, _)| !start.is_finite()) {
        return Err(StatsError::InvalidStart(bad));
    }
    let start_unix_s = parts
        .iter()
        .map(|&(start, _)| start)
        .min_by(f64::total_cmp)
        .ok_or(StatsError::NoParts)?;
    let mut records: Vec<RequestRecord> = parts
        .iter()
        .flat_map(|(start, records)| {
            let offset_s = start - start_unix_s;
            records.iter().map(move |r| shifted(r, offset_s))
        })
        .collect();
    records.sort_by(|a, b| {
        (a.actual_send_s.total_cmp(&b.actual_send_s))
            .then(a.client_id.cmp(&b.client_id))
            .then(a.index.cmp(&b.index))
    });
    let mut ids: Vec<(usize, usize)> = records.iter().map(|r| (r.client_id, r.index)).collect();
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
        let (client_id, index) = pair[0];
        return Err(StatsError::DuplicateRecord { client_id, index });
    }
    Ok(MergedRecords {
        start_unix_s,
        records,
    })
}

/// `record` with every time moved `offset_s` later (no-op for 0, so one part merges exactly).
fn shifted(record: &RequestRecord, offset_s: f64) -> RequestRecord {
    let mut record = record.clone();
    if offset_s != 0.0 {
        record.target_send_s += offset_s;
        record.actual_send_s += offset_s;
        record.first_token_s = record.first_token_s.map(|t| t + offset_s);
        record.chunk_times_s.iter_mut().for_each(|t| *t += offset_s);
        record.end_s += offset_s;
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::varied_run;
    use crate::stats::{summarize, SummaryOptions};

    const BASE_UNIX_S: f64 = 1_700_000_000.0;

    /// A run of three clients on one timeline (`client_id` = index mod 3), and the same
    /// records as each client saved them: relative to its own start, `client` seconds later.
    fn three_clients() -> (Vec<RequestRecord>, Vec<(f64, Vec<RequestRecord>)>) {
        let mut whole = varied_run(300);
        for record in &mut whole {
            record.client_id = record.index % 3;
        }
        let parts = (0..3)
            .map(|client| {
                let offset_s = client as f64;
                let own: Vec<RequestRecord> = whole
                    .iter()
                    .filter(|r| r.client_id == client)
                    .map(|r| shifted(r, -offset_s))
                    .collect();
                (BASE_UNIX_S + offset_s, own)
            })
            .collect();
        (whole, parts)
    }

    #[test]
    fn merging_three_clients_gives_the_whole_runs_statistics() {
        let (whole, parts) = three_clients();
        let merged = merge(&parts).expect("merges");
        assert_eq!(merged.start_unix_s, BASE_UNIX_S);
        assert_eq!(merged.records.len(), whole.len());
        let options = SummaryOptions {
            percentiles: vec![50.0, 90.0, 99.0, 99.9],
            goodput: crate::stats::parse_goodput(&["ttft:150".into(), "tpot:30".into()])
                .expect("valid"),
            target_request_rate: Some(8.0),
            ..SummaryOptions::default()
        };
        let expected = summarize(&whole, &options);
        assert_eq!(summarize(&merged.records, &options), expected);
        assert!(expected.steady_state.is_some() && expected.goodput.is_some());
        // The same records, in the merged order.
        let mut sorted_whole = whole.clone();
        sorted_whole.sort_by(|a, b| {
            (a.actual_send_s.total_cmp(&b.actual_send_s))
                .then(a.client_id.cmp(&b.client_id))
                .then(a.index.cmp(&b.index))
        });
        assert_eq!(merged.records, sorted_whole);
    }

    #[test]
    fn part_order_does_not_matter() {
        let (_, mut parts) = three_clients();
        let forward = merge(&parts).expect("merges");
        parts.reverse();
        assert_eq!(merge(&parts).expect("merges"), forward);
    }

    #[test]
    fn one_part_is_unchanged() {
        let records = varied_run(20);
        let merged = merge(&[(BASE_UNIX_S, records.clone())]).expect("merges");
        let mut expected = records;
        expected.sort_by(|a, b| a.actual_send_s.total_cmp(&b.actual_send_s));
        assert_eq!(merged.records, expected);
    }

    #[test]
    fn rejects_duplicates_and_bad_input() {
        let records = varied_run(5);
        let twice = [(BASE_UNIX_S, records.clone()), (BASE_UNIX_S, records)];
        assert!(matches!(
            merge(&twice),
            Err(StatsError::DuplicateRecord {
                client_id: 0,
                index: 0
            })
        ));
        assert!(matches!(merge(&[]), Err(StatsError::NoParts)));
        let nan = [(f64::NAN, varied_run(2))];
        assert!(matches!(merge(&nan), Err(StatsError::InvalidStart(_))));
    }
}
