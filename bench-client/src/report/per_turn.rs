//! The per-turn table of the terminal report: one row per turn index of a conversation run, so
//! that turn 0 and turn 4 (their prompt lengths and TTFTs) sit one above the other.

use std::fmt::Write;

use super::rule::rule;
use crate::stats::{BenchSummary, TurnSummary};

/// The table, or nothing when the run had no conversations.
pub(super) fn render_per_turn(out: &mut String, summary: &BenchSummary) {
    if summary.per_turn.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", rule("Per turn (conversations)", '-'));
    let _ = writeln!(
        out,
        "{:>4} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Turn", "Sent", "OK", "Prompt tok", "TTFT mean", "TTFT p50", "TTFT p99", "E2EL mean"
    );
    for turn in &summary.per_turn {
        let _ = writeln!(out, "{}", row(turn));
    }
    let _ = writeln!(out, "{:>4} (latencies in ms; prompt tokens: mean)", "");
}

fn row(turn: &TurnSummary) -> String {
    format!(
        "{:>4} {:>6} {:>6} {:>10.1} {:>10} {:>10} {:>10} {:>10}",
        turn.turn,
        turn.num_requests,
        turn.num_completed,
        turn.mean_input_tokens,
        ms(turn.mean_ttft_ms),
        ms(turn.median_ttft_ms),
        ms(turn.p99_ttft_ms),
        ms(turn.mean_e2el_ms),
    )
}

/// `12.34`, or `-` without samples.
fn ms(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.2}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RequestRecord;
    use crate::stats::test_records::streamed;
    use crate::stats::{summarize, SummaryOptions};

    /// Turn `turn`: first token 0.1·(turn + 1) s after its send, prompt 100·(turn + 1) tokens.
    fn turn(id: usize, turn: usize) -> RequestRecord {
        let send_s = turn as f64;
        let ttft_s = 0.1 * (turn + 1) as f64;
        let mut record = streamed(0, send_s, send_s, &[send_s + ttft_s], send_s + 0.5, 1);
        record.conversation = Some((id, turn));
        record.input_tokens = 100 * (turn + 1);
        record
    }

    fn table(records: &[RequestRecord]) -> String {
        let mut out = String::new();
        render_per_turn(&mut out, &summarize(records, &SummaryOptions::default()));
        out
    }

    #[test]
    fn one_row_per_turn_in_order() {
        let text = table(&[turn(0, 0), turn(0, 1), turn(1, 0)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        let cells = |line: &str| {
            line.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cells(lines[2]),
            ["0", "2", "2", "100.0", "100.00", "100.00", "100.00", "500.00"],
            "{text}"
        );
        assert_eq!(
            cells(lines[3])[..5],
            ["1", "1", "1", "200.0", "200.00"],
            "{text}"
        );
    }

    #[test]
    fn no_table_without_conversations() {
        assert_eq!(table(&[streamed(0, 0.0, 0.0, &[0.1], 0.2, 1)]), "");
    }
}
