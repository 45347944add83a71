//! The per-model table of the terminal report: one row per model name the requests sent (the
//! LoRA adapters of `--lora-modules`), shown when there was more than one.

use std::fmt::Write;

use super::rule::rule;
use crate::stats::{
    BenchSummary, MetricStats, ModelSummary, PER_MODEL_METRICS, PER_MODEL_PERCENTILE,
};

/// Width of a `mean / p99` latency column (two spaces before it).
const LATENCY_WIDTH: usize = 15;

/// The table, or nothing when the requests named fewer than two models.
pub(super) fn render_per_model(out: &mut String, summary: &BenchSummary) {
    if summary.per_model.len() < 2 {
        return;
    }
    let name_width = summary
        .per_model
        .keys()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(0)
        .max("Model".len());
    let _ = writeln!(out, "{}", rule("Per model (latencies: mean / p99 ms)", '-'));
    let mut header = format!(
        "{:<name_width$} {:>5} {:>6} {:>7} {:>9}",
        "Model", "OK", "Failed", "Req/s", "Out tok/s"
    );
    for metric in PER_MODEL_METRICS {
        let short = metric.label().split(' ').next().unwrap_or("");
        let _ = write!(header, "  {short:>LATENCY_WIDTH$}");
    }
    let _ = writeln!(out, "{header}");
    for (name, model) in &summary.per_model {
        let _ = writeln!(out, "{}", row(name, name_width, model));
    }
}

fn row(name: &str, name_width: usize, model: &ModelSummary) -> String {
    let mut row = format!(
        "{name:<name_width$} {:>5} {:>6} {:>7.2} {:>9.2}",
        model.num_completed, model.num_failed, model.request_throughput, model.output_throughput
    );
    for metric in PER_MODEL_METRICS {
        let _ = write!(
            row,
            "  {:>LATENCY_WIDTH$}",
            mean_and_p99(model.metric(metric))
        );
    }
    row
}

/// `12.34 / 56.78`, or `-` without samples.
fn mean_and_p99(stats: Option<&MetricStats>) -> String {
    let Some(stats) = stats else {
        return "-".to_string();
    };
    match stats.percentile_ms(PER_MODEL_PERCENTILE) {
        Some(p99) => format!("{:.2} / {p99:.2}", stats.mean_ms),
        None => format!("{:.2} / -", stats.mean_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RequestRecord;
    use crate::stats::test_records::streamed;
    use crate::stats::{summarize, SummaryOptions};

    /// Sent at `send_s`, chunks 0.25 and 0.5 s later, ends with the second; 2 tokens.
    fn request(index: usize, model: &str, send_s: f64) -> RequestRecord {
        let chunks_s = [send_s + 0.25, send_s + 0.5];
        let mut record = streamed(index, send_s, send_s, &chunks_s, send_s + 0.5, 2);
        record.model = Some(model.into());
        record
    }

    fn table(records: &[RequestRecord]) -> String {
        let mut out = String::new();
        render_per_model(&mut out, &summarize(records, &SummaryOptions::default()));
        out
    }

    #[test]
    fn one_row_per_model_with_counts_rates_and_latencies() {
        // One second in all: `sql-lora` 2 requests, `chat` 1; TTFT 250 ms, TPOT and ITL 250 ms,
        // E2EL 500 ms everywhere.
        let records = [
            request(0, "sql-lora", 0.0),
            request(1, "chat", 0.25),
            request(2, "sql-lora", 0.5),
        ];
        let text = table(&records);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[1].starts_with("Model    "), "{text}");
        assert!(
            lines[1].contains("TTFT") && lines[1].contains("E2EL"),
            "{text}"
        );
        let cells = |line: &str| {
            line.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        // Rows in name order.
        let chat = cells(lines[2]);
        assert_eq!(chat[..5], ["chat", "1", "0", "1.00", "2.00"], "{text}");
        let sql = cells(lines[3]);
        assert_eq!(sql[..5], ["sql-lora", "2", "0", "2.00", "4.00"], "{text}");
        assert_eq!(sql[5..8], ["250.00", "/", "250.00"], "TTFT: {text}");
        assert_eq!(sql[14..17], ["500.00", "/", "500.00"], "E2EL: {text}");
    }

    #[test]
    fn no_table_for_a_single_model() {
        let records = [request(0, "base", 0.0), request(1, "base", 0.5)];
        assert_eq!(table(&records), "");
    }
}
