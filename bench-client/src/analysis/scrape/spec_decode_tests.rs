use super::*;

/// The four series under `ns`, with `model` as the label set, `per_pos` by position (positions
/// written in the order given).
fn counters(ns: &str, model: &str, totals: [u64; 3], per_pos: &[(&str, u64)]) -> String {
    let labels = format!("engine=\"0\",model_name=\"{model}\"");
    let [drafts, draft_tokens, accepted] = totals;
    let mut text = format!(
        "# TYPE {ns}:spec_decode_num_drafts_total counter\n\
         {ns}:spec_decode_num_drafts_total{{{labels}}} {drafts}.0\n\
         # TYPE {ns}:spec_decode_num_draft_tokens_total counter\n\
         {ns}:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens}.0\n\
         # TYPE {ns}:spec_decode_num_accepted_tokens_total counter\n\
         {ns}:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}.0\n"
    );
    for (position, value) in per_pos {
        text += &format!(
            "{ns}:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position=\"{position}\"}} {value}.0\n"
        );
    }
    text
}

fn stats(ns: &str, before: &str, after: &str) -> Option<SpecDecodeStats> {
    spec_decode_stats(ns, &Exposition::parse(before), &Exposition::parse(after))
}

#[test]
fn deltas_and_vllm_derivations() {
    for ns in ["pagoda", "vllm"] {
        let before = counters(
            ns,
            "m",
            [10, 40, 20],
            &[("0", 8), ("1", 6), ("2", 4), ("3", 2)],
        );
        let after = counters(
            ns,
            "m",
            [110, 440, 190],
            &[("0", 78), ("1", 51), ("2", 34), ("3", 27)],
        );
        let stats = stats(ns, &before, &after).expect("speculated in the window");
        assert_eq!(stats.num_drafts, 100);
        assert_eq!(stats.num_draft_tokens, 400);
        assert_eq!(stats.num_accepted_tokens, 170);
        assert_eq!(stats.acceptance_rate, 170.0 / 400.0);
        assert!((stats.mean_acceptance_length - 2.7).abs() < 1e-12);
        assert_eq!(stats.num_accepted_tokens_per_pos, [70, 45, 30, 25]);
        assert_eq!(stats.per_position_acceptance_rate, [0.7, 0.45, 0.3, 0.25]);
        // The positions' acceptances add up to the accepted tokens.
        let sum: u64 = stats.num_accepted_tokens_per_pos.iter().sum();
        assert_eq!(sum, stats.num_accepted_tokens);
    }
}

#[test]
fn label_sets_are_summed_per_position_in_numeric_order() {
    let positions: Vec<(String, u64)> = (0..12).map(|p| (p.to_string(), 12 - p)).collect();
    // Written out of order: "10" and "11" before "2" as text would sort them.
    let mut shuffled: Vec<(&str, u64)> = positions.iter().map(|(p, v)| (p.as_str(), *v)).collect();
    shuffled.reverse();
    let after = counters("vllm", "a", [30, 360, 100], &shuffled)
        + &counters("vllm", "b", [10, 120, 56], &shuffled);
    let stats = stats("vllm", "", &after).expect("exported from the start");
    assert_eq!(stats.num_drafts, 40);
    assert_eq!(stats.num_draft_tokens, 480);
    assert_eq!(stats.num_accepted_tokens, 156);
    let expected: Vec<u64> = (0..12).map(|p| 2 * (12 - p)).collect();
    assert_eq!(stats.num_accepted_tokens_per_pos, expected);
    assert_eq!(stats.per_position_acceptance_rate[0], 24.0 / 40.0);
    assert_eq!(stats.per_position_acceptance_rate[2], 20.0 / 40.0);
    assert_eq!(stats.per_position_acceptance_rate[11], 2.0 / 40.0);
}

#[test]
fn absent_unless_exported_and_moved() {
    let idle = counters("pagoda", "m", [5, 20, 9], &[("0", 5)]);
    // Not exported (a server that does not speculate).
    assert_eq!(stats("pagoda", "", "pagoda:num_requests_running 0\n"), None);
    // Exported under another namespace only.
    assert_eq!(stats("vllm", &idle, &idle), None);
    // Exported, but nothing proposed during the window.
    assert_eq!(stats("pagoda", &idle, &idle), None);
    // Exported with zeroes (a speculating server that has had no request yet).
    let zero = counters("pagoda", "m", [0, 0, 0], &[("0", 0), ("1", 0)]);
    assert_eq!(stats("pagoda", &zero, &zero), None);
}

#[test]
fn a_reset_counts_from_zero_and_missing_positions_as_never_accepted() {
    let before = counters("pagoda", "m", [500, 2000, 900], &[("0", 400), ("1", 300)]);
    // The server restarted: every counter is lower; position 1 is not exported.
    let after = counters("pagoda", "m", [10, 30, 12], &[("0", 8), ("2", 1)]);
    let stats = stats("pagoda", &before, &after).expect("the new counters");
    assert_eq!(
        (
            stats.num_drafts,
            stats.num_draft_tokens,
            stats.num_accepted_tokens
        ),
        (10, 30, 12)
    );
    assert_eq!(stats.num_accepted_tokens_per_pos, [8, 0, 1]);
    assert_eq!(stats.per_position_acceptance_rate, [0.8, 0.0, 0.1]);
}

#[test]
fn without_per_position_series_the_totals_still_count() {
    let after = counters("pagoda", "m", [4, 16, 6], &[]);
    let stats = stats("pagoda", "", &after).expect("the totals");
    assert_eq!(stats.mean_acceptance_length, 2.5);
    assert!(stats.num_accepted_tokens_per_pos.is_empty());
    assert!(stats.per_position_acceptance_rate.is_empty());
}

#[test]
fn round_trips_through_json() {
    let after = counters("pagoda", "m", [4, 16, 6], &[("0", 3), ("1", 2), ("2", 1)]);
    let stats = stats("pagoda", "", &after).expect("the totals");
    let json = serde_json::to_value(&stats).expect("serializes");
    assert_eq!(
        json["num_accepted_tokens_per_pos"],
        serde_json::json!([3, 2, 1])
    );
    let back: SpecDecodeStats = serde_json::from_value(json).expect("loads");
    assert_eq!(back, stats);
}

/// A server that does not speculate: the result has no `spec_decode` key, and a result saved
/// before the section existed still loads.
#[test]
fn server_side_stats_without_speculation() {
    let empty = || super::super::Scrape {
        unix_s: 0.0,
        exposition: Exposition::parse("pagoda:num_requests_running 1\n"),
    };
    let stats = super::super::server_side_stats("pagoda", &empty(), &empty(), Vec::new());
    assert_eq!(stats.spec_decode, None);
    let mut json = serde_json::to_value(&stats).expect("serializes");
    let object = json.as_object_mut().expect("an object");
    assert!(!object.contains_key("spec_decode"), "{object:?}");
    let loaded: super::super::ServerSideStats = serde_json::from_value(json).expect("loads");
    assert_eq!(loaded, stats);
}
