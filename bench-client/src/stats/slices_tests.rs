//! Time slices on built runs: a partition of the run, and statistics that show a slow stretch.

use super::*;
use crate::stats::test_records::{streamed, varied_run};
use crate::stats::{summarize, Metric};

#[test]
fn slices_partition_the_run() {
    let records = varied_run(500);
    let options = SummaryOptions::default();
    let summary = summarize(&records, &options);
    let sliced = time_slices(&records, 3.0, &options).expect("slices");
    let slices = &sliced.slices;
    assert!(slices.len() > 5, "{} slices", slices.len());
    let sum = |f: fn(&WindowSummary) -> usize| slices.iter().map(f).sum::<usize>();
    assert_eq!(sum(|s| s.num_sent), records.len());
    assert_eq!(sum(|s| s.num_completed), summary.num_completed);
    assert_eq!(sum(|s| s.num_failed), summary.num_failed);
    assert_eq!(sum(|s| s.total_output_tokens), summary.total_output_tokens);
    // Contiguous, from the run's start to its end.
    assert_eq!(slices[0].start_s, summary.start_s);
    for pair in slices.windows(2) {
        assert_eq!(pair[0].end_s, pair[1].start_s);
    }
    let last = slices.last().expect("a slice");
    assert_eq!(last.end_s, summary.start_s + summary.duration_s);
    assert!(last.end_s - last.start_s <= 3.0);
}

#[test]
fn a_slow_stretch_shows_in_its_slice_only() {
    // One request per 100 ms for 6 s; those sent in [2, 4) take 10× longer to their first token.
    let records: Vec<RequestRecord> = (0..60)
        .map(|i| {
            let s = i as f64 * 0.1;
            let ttft_s = if (2.0..4.0).contains(&s) { 0.5 } else { 0.05 };
            streamed(i, s, s, &[s + ttft_s], s + ttft_s + 0.01, 1)
        })
        .collect();
    let sliced = time_slices(&records, 2.0, &SummaryOptions::default()).expect("slices");
    let median_ttft_ms: Vec<f64> = sliced
        .slices
        .iter()
        .map(|slice| {
            let ttft = slice.metrics.iter().find(|m| m.metric == Metric::Ttft);
            ttft.and_then(|m| m.stats.as_ref()).expect("ttft").median_ms
        })
        .collect();
    assert_eq!(median_ttft_ms.len(), 3, "{median_ttft_ms:?}");
    assert!(
        (median_ttft_ms[0] - 50.0).abs() < 1e-6,
        "{median_ttft_ms:?}"
    );
    assert!(
        (median_ttft_ms[1] - 500.0).abs() < 1e-6,
        "{median_ttft_ms:?}"
    );
    assert!(
        (median_ttft_ms[2] - 50.0).abs() < 1e-6,
        "{median_ttft_ms:?}"
    );
}

#[test]
fn a_run_shorter_than_a_slice_is_one_slice() {
    let records = vec![streamed(0, 0.0, 0.0, &[0.1, 0.2], 0.3, 2)];
    let sliced = time_slices(&records, 60.0, &SummaryOptions::default()).expect("slices");
    assert_eq!(sliced.slices.len(), 1);
    assert_eq!(sliced.slices[0].num_completed, 1);
    assert_eq!(sliced.slices[0].end_s, 0.3);
}

#[test]
fn too_many_slices_are_merged_and_no_records_give_none() {
    let records = varied_run(200);
    let sliced = time_slices(&records, 1e-9, &SummaryOptions::default()).expect("slices");
    assert!(sliced.slices.len() <= MAX_NUM_SLICES);
    assert!(sliced.slice_duration_s > 1e-9);
    let total: usize = sliced.slices.iter().map(|s| s.num_sent).sum();
    assert_eq!(total, records.len());
    assert!(time_slices(&[], 1.0, &SummaryOptions::default()).is_none());
}
