//! The run as a timeline: its span, requests in flight over time, tokens received per second.

use super::itl::token_arrivals;
use crate::record::RequestRecord;

/// When the run started: the earliest target or actual send (normally the first request's due
/// time, `t = 0`). `None` without records.
pub(super) fn run_start_s(records: &[RequestRecord]) -> Option<f64> {
    records
        .iter()
        .map(|r| r.target_send_s.min(r.actual_send_s))
        .min_by(f64::total_cmp)
}

/// When the run ended: the last response's end (failed ones included).
pub(super) fn run_end_s(records: &[RequestRecord]) -> Option<f64> {
    records.iter().map(|r| r.end_s).max_by(f64::total_cmp)
}

/// How many requests are in flight from each time on: `(t, level)` at every time the level
/// changes, in time order. A request is in flight over `[actual_send_s, end_s)`; all requests
/// count, failed ones included (they occupied the server too).
pub fn concurrency_steps(records: &[RequestRecord]) -> Vec<(f64, usize)> {
    let mut events: Vec<(f64, i64)> = records
        .iter()
        .flat_map(|r| [(r.actual_send_s, 1), (r.end_s, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut steps: Vec<(f64, usize)> = Vec::new();
    let mut level: i64 = 0;
    for (t, delta) in events {
        level += delta;
        let level = level.max(0) as usize;
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = level,
            _ => steps.push((t, level)),
        }
    }
    steps
}

/// The most requests in flight at once (a sweep over half-open intervals: a request that ends
/// at the instant another starts does not overlap it, as in vLLM).
pub fn peak_concurrency(records: &[RequestRecord]) -> usize {
    concurrency_steps(records)
        .iter()
        .map(|&(_, level)| level)
        .max()
        .unwrap_or(0)
}

/// vLLM's `max_concurrent_requests`: successful requests only, each counted in every 1-second
/// bucket (from the earliest successful send) from the one its send falls in to the one its end
/// falls in, both included; the fullest bucket. Up to 2–3× the requests in flight at any one
/// instant ([`peak_concurrency`]) when requests are shorter than a second.
pub fn max_concurrent_requests_per_second(records: &[RequestRecord]) -> usize {
    let successful: Vec<&RequestRecord> = records.iter().filter(|r| r.is_success()).collect();
    let Some(start_s) = successful
        .iter()
        .map(|r| r.actual_send_s)
        .min_by(f64::total_cmp)
    else {
        return 0;
    };
    let bucket = |t: f64| (t - start_s).max(0.0) as usize;
    let num_buckets = successful
        .iter()
        .map(|r| bucket(r.end_s) + 1)
        .max()
        .unwrap_or(0);
    let mut counts = vec![0usize; num_buckets];
    for record in successful {
        for count in &mut counts[bucket(record.actual_send_s)..=bucket(record.end_s)] {
            *count += 1;
        }
    }
    counts.into_iter().max().unwrap_or(0)
}

/// The pieces of the concurrency step function inside `[start_s, end_s)`:
/// `(level, seconds at that level)`.
pub(super) fn concurrency_segments(
    steps: &[(f64, usize)],
    start_s: f64,
    end_s: f64,
) -> Vec<(usize, f64)> {
    let mut segments = Vec::new();
    let mut level = 0;
    let mut from_s = start_s;
    for &(t, next_level) in steps {
        if t > from_s {
            segments.push((level, t.min(end_s) - from_s));
            from_s = t;
        }
        if t >= end_s {
            return segments;
        }
        level = next_level;
    }
    if end_s > from_s {
        segments.push((level, end_s - from_s));
    }
    segments
}

/// The time-averaged number of requests in flight over `[start_s, end_s)`.
pub(super) fn mean_concurrency(steps: &[(f64, usize)], start_s: f64, end_s: f64) -> f64 {
    let length_s = end_s - start_s;
    if length_s <= 0.0 {
        return 0.0;
    }
    let segments = concurrency_segments(steps, start_s, end_s);
    segments
        .iter()
        .map(|&(level, s)| level as f64 * s)
        .sum::<f64>()
        / length_s
}

/// Output tokens received in each 1-second bucket `[origin + i, origin + i + 1)`, successful
/// requests only (as vLLM), tokens attributed to chunks by [`super::tokens_per_chunk`].
pub fn output_tokens_per_second(records: &[RequestRecord], origin_s: f64) -> Vec<usize> {
    let mut buckets: Vec<usize> = Vec::new();
    for record in records.iter().filter(|r| r.is_success()) {
        for (t, num_tokens) in token_arrivals(record) {
            let bucket = (t - origin_s).floor().max(0.0) as usize;
            if buckets.len() <= bucket {
                buckets.resize(bucket + 1, 0);
            }
            buckets[bucket] += num_tokens;
        }
    }
    buckets
}

/// The peak output throughput: the most tokens received in one 1-second bucket.
pub fn max_output_tokens_per_s(records: &[RequestRecord], origin_s: f64) -> f64 {
    let buckets = output_tokens_per_second(records, origin_s);
    buckets.into_iter().max().unwrap_or(0) as f64
}

/// `count` per second of `duration_s` (0 for an empty duration).
pub(super) fn per_second(count: usize, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        count as f64 / duration_s
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;
    use crate::stats::test_records::{failed, streamed};

    fn in_flight(send_s: f64, end_s: f64) -> RequestRecord {
        streamed(0, send_s, send_s, &[], end_s, 0)
    }

    #[test]
    fn vllms_concurrency_counts_requests_per_second_bucket() {
        // Three back-to-back 0.4 s requests from 0 to 1.2 s: one at a time, but all three are
        // active during the first second (the third ends in the second bucket).
        let records = vec![
            in_flight(0.0, 0.4),
            in_flight(0.4, 0.8),
            in_flight(0.8, 1.2),
            in_flight(10.0, 10.5),
        ];
        assert_eq!(peak_concurrency(&records), 1);
        assert_eq!(max_concurrent_requests_per_second(&records), 3);
        assert_eq!(max_concurrent_requests_per_second(&[]), 0);
    }

    #[test]
    fn peak_concurrency_on_a_built_timeline() {
        // [0,2) [1,3) [1.5,2.5) overlap at 1.5..2: three; [3,4) starts as [1,3) ends.
        let records = vec![
            in_flight(0.0, 2.0),
            in_flight(1.0, 3.0),
            in_flight(1.5, 2.5),
            in_flight(3.0, 4.0),
        ];
        assert_eq!(peak_concurrency(&records), 3);
        let steps = concurrency_steps(&records);
        assert_eq!(
            steps,
            vec![
                (0.0, 1),
                (1.0, 2),
                (1.5, 3),
                (2.0, 2),
                (2.5, 1),
                (3.0, 1),
                (4.0, 0)
            ]
        );
        // Back to back: never two at once.
        let chain = vec![
            in_flight(0.0, 1.0),
            in_flight(1.0, 2.0),
            in_flight(2.0, 3.0),
        ];
        assert_eq!(peak_concurrency(&chain), 1);
        assert_eq!(peak_concurrency(&[]), 0);
    }

    #[test]
    fn failed_requests_are_in_flight_too() {
        let records = vec![in_flight(0.0, 2.0), failed(1, 0.5, 1.5, ErrorKind::Timeout)];
        assert_eq!(peak_concurrency(&records), 2);
    }

    #[test]
    fn mean_concurrency_integrates_the_steps() {
        let records = vec![in_flight(0.0, 2.0), in_flight(1.0, 3.0)];
        let steps = concurrency_steps(&records);
        // Levels 1, 2, 1 over [0,1), [1,2), [2,3).
        assert_eq!(mean_concurrency(&steps, 0.0, 3.0), 4.0 / 3.0);
        assert_eq!(mean_concurrency(&steps, 1.0, 2.0), 2.0);
        assert_eq!(mean_concurrency(&steps, 0.5, 1.5), 1.5);
        assert_eq!(mean_concurrency(&steps, -1.0, 0.0), 0.0);
        assert_eq!(
            concurrency_segments(&steps, 0.5, 2.5),
            vec![(1, 0.5), (2, 1.0), (1, 0.5)]
        );
    }

    #[test]
    fn tokens_per_second_buckets() {
        // A: 4 tokens in chunks at 0.25, 0.5, 1.25, 1.5 (one each).
        // B: 7 tokens over chunks at 0.75, 1.0, 1.125, 2.5 → 1, 2, 2, 2.
        // C: failed, its tokens are not counted.
        let a = streamed(0, 0.0, 0.0, &[0.25, 0.5, 1.25, 1.5], 1.5, 4);
        let b = streamed(1, 0.0, 0.0, &[0.75, 1.0, 1.125, 2.5], 2.5, 7);
        let mut c = streamed(2, 0.0, 0.0, &[0.5, 0.6], 0.7, 2);
        c.error = Some(ErrorKind::Stream);
        let records = vec![a, b, c];
        assert_eq!(output_tokens_per_second(&records, 0.0), vec![3, 6, 2]);
        assert_eq!(max_output_tokens_per_s(&records, 0.0), 6.0);
        // Buckets are aligned on the origin given.
        assert_eq!(output_tokens_per_second(&records, 0.125), vec![5, 4, 2]);
    }

    #[test]
    fn run_span() {
        let mut late_first = streamed(0, 0.0, 0.25, &[0.5], 1.0, 1);
        late_first.target_send_s = 0.0;
        let records = vec![late_first, failed(1, 0.5, 2.0, ErrorKind::Connection)];
        assert_eq!(run_start_s(&records), Some(0.0));
        assert_eq!(run_end_s(&records), Some(2.0));
        assert_eq!(run_start_s(&[]), None);
    }
}
