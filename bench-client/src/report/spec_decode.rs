//! The "Speculative Decoding" block, in `vllm bench serve`'s layout, after the latency blocks:
//! the server's acceptance over the run (`--scrape-metrics`, when the server speculates).

use std::fmt::Write;

use super::rule::{line, rule};
use crate::scrape::SpecDecodeStats;

pub(super) fn render_spec_decode(out: &mut String, stats: &SpecDecodeStats) {
    let _ = writeln!(out, "{}", rule("Speculative Decoding", '-'));
    line(
        out,
        "Acceptance rate (%):",
        format!("{:.2}", stats.acceptance_rate * 100.0),
    );
    line(
        out,
        "Acceptance length:",
        format!("{:.2}", stats.mean_acceptance_length),
    );
    line(out, "Drafts:", stats.num_drafts);
    line(out, "Draft tokens:", stats.num_draft_tokens);
    line(out, "Accepted tokens:", stats.num_accepted_tokens);
    if !stats.per_position_acceptance_rate.is_empty() {
        let _ = writeln!(out, "Per-position acceptance (%):");
        for (position, rate) in stats.per_position_acceptance_rate.iter().enumerate() {
            line(
                out,
                &format!("  Position {position}:"),
                format!("{:.2}", rate * 100.0),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut out = String::new();
        render_spec_decode(&mut out, &stats);
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
