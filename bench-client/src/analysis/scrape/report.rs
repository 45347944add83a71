//! The server's figures in the terminal report: vLLM's "Speculative Decoding" block (after the
//! latency blocks) and the server's own view of the run (`--scrape-metrics`), laid out as the
//! core report's blocks are.

use std::fmt::Write;

use super::{HistogramSummary, ServerSideStats, SpecDecodeStats};
use crate::report::rule::{line, rule};

/// The server's own view of the run (`--scrape-metrics`), beside the client's.
pub fn render_server_side(stats: &ServerSideStats) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", rule("Server side (from its /metrics)", '-'));
    line(&mut out, "Metrics namespace:", &stats.namespace);
    let quantiles = |s: &Option<HistogramSummary>| {
        s.as_ref().map(|h| {
            format!(
                "{:.2} / {:.2} / {:.2}",
                h.p50 * 1e3,
                h.p90 * 1e3,
                h.p99 * 1e3
            )
        })
    };
    for (label, summary) in [
        ("Server TTFT p50 / p90 / p99 (ms):", &stats.ttft_s),
        ("Server ITL p50 / p90 / p99 (ms):", &stats.itl_s),
        (
            "Server queue time p50 / p90 / p99 (ms):",
            &stats.queue_time_s,
        ),
    ] {
        if let Some(text) = quantiles(summary) {
            line(&mut out, label, text);
        }
    }
    // Each figure: its label, its value, the scale it is shown at and its decimals.
    let figures = [
        ("Mean queue time (ms):", stats.mean_queue_time_s, 1e3, 2),
        (
            "Peak waiting requests:",
            stats.peak_num_requests_waiting,
            1.0,
            0,
        ),
        (
            "Peak KV-cache usage (%):",
            stats.peak_kv_cache_usage,
            100.0,
            1,
        ),
        ("Preemptions:", stats.num_preemptions, 1.0, 0),
        (
            "Prefix-cache hit rate (%):",
            stats.prefix_cache_hit_rate,
            100.0,
            1,
        ),
    ];
    for (label, value, scale, digits) in figures {
        let text = value.map_or("n/a".to_string(), |v| format!("{:.*}", digits, v * scale));
        line(&mut out, label, text);
    }
    out
}

/// vLLM's "Speculative Decoding" block, for the report's place after the latency blocks.
pub fn render_spec_decode(stats: &SpecDecodeStats) -> String {
    let mut out = String::new();
    let _ = writeln!(&mut out, "{}", rule("Speculative Decoding", '-'));
    line(
        &mut out,
        "Acceptance rate (%):",
        format!("{:.2}", stats.acceptance_rate * 100.0),
    );
    line(
        &mut out,
        "Acceptance length:",
        format!("{:.2}", stats.mean_acceptance_length),
    );
    line(&mut out, "Drafts:", stats.num_drafts);
    line(&mut out, "Draft tokens:", stats.num_draft_tokens);
    line(&mut out, "Accepted tokens:", stats.num_accepted_tokens);
    if !stats.per_position_acceptance_rate.is_empty() {
        let _ = writeln!(&mut out, "Per-position acceptance (%):");
        for (position, rate) in stats.per_position_acceptance_rate.iter().enumerate() {
            line(
                &mut out,
                &format!("  Position {position}:"),
                format!("{:.2}", rate * 100.0),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_side_block_shows_each_figure_at_its_scale_or_n_a() {
        let stats: ServerSideStats = serde_json::from_value(serde_json::json!({
            "metrics_url": "http://s/metrics", "namespace": "vllm", "window_s": 10.0,
            "num_scrapes": 3, "num_failed_scrapes": 0, "timeline": [],
            "mean_queue_time_s": 0.0125, "peak_kv_cache_usage": 0.5, "num_preemptions": 2.0,
        }))
        .expect("stats");
        let text = render_server_side(&stats);
        for expected in [
            "Metrics namespace:                       vllm",
            "Mean queue time (ms):                    12.50",
            "Peak waiting requests:                   n/a",
            "Peak KV-cache usage (%):                 50.0",
            "Preemptions:                             2",
            "Prefix-cache hit rate (%):               n/a",
        ] {
            assert!(text.contains(expected), "{expected:?} not in\n{text}");
        }
    }

    #[test]
    fn vllm_layout() {
        let stats = SpecDecodeStats {
            num_drafts: 100,
            num_draft_tokens: 400,
            num_accepted_tokens: 170,
            acceptance_rate: 0.425,
            mean_acceptance_length: 2.7,
            num_accepted_tokens_per_pos: vec![70, 45, 30, 25],
            per_position_acceptance_rate: vec![0.7, 0.45, 0.3, 0.25],
        };
        let out = render_spec_decode(&stats);
        let expected = "\
-------------- Speculative Decoding --------------
Acceptance rate (%):                     42.50
Acceptance length:                       2.70
Drafts:                                  100
Draft tokens:                            400
Accepted tokens:                         170
Per-position acceptance (%):
  Position 0:                            70.00
  Position 1:                            45.00
  Position 2:                            30.00
  Position 3:                            25.00
";
        assert_eq!(out, expected);
    }
}
