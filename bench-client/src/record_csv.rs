//! `serve --csv`: one row per request, for spreadsheets and dataframes (AIPerf's and guidellm's
//! per-request exports). Times are milliseconds except the send times, which are seconds (from
//! the run's start, and as Unix time to join the server's own logs and metrics). A metric a
//! request does not define (no first token, one output token) is an empty cell.

use std::io::Write;

use serde::Serialize;

use crate::record::{RequestRecord, TokenCountSource};
use crate::stats::{chunk_gaps_s, error_label, Metric};

/// One request's row. The field order is the column order.
#[derive(Debug, Serialize)]
struct CsvRow<'a> {
    /// 1-based run number (`--num-runs`).
    run: usize,
    index: usize,
    client_id: usize,
    model: &'a str,
    conversation_id: Option<usize>,
    turn_index: Option<usize>,
    target_send_s: f64,
    actual_send_s: f64,
    sent_unix_s: f64,
    client_queue_time_ms: f64,
    ttft_ms: Option<f64>,
    ttst_ms: Option<f64>,
    tpot_ms: Option<f64>,
    itl_mean_ms: Option<f64>,
    itl_max_ms: Option<f64>,
    e2el_ms: f64,
    num_chunks: usize,
    input_tokens: usize,
    output_tokens: usize,
    expected_output_tokens: usize,
    token_count_source: &'static str,
    num_retries: u32,
    /// Empty for a success; else `connection`, `http_<status>`, `stream` or `timeout`.
    error: String,
    error_message: &'a str,
}

/// One run's records and the Unix time its clock started.
#[derive(Debug, Clone, Copy)]
pub struct RunRecords<'a> {
    pub start_unix_s: f64,
    pub records: &'a [RequestRecord],
}

fn ms(seconds: f64) -> f64 {
    seconds * 1e3
}

fn row<'a>(run: usize, start_unix_s: f64, record: &'a RequestRecord) -> CsvRow<'a> {
    let gaps_s = chunk_gaps_s(record);
    let value_ms = |metric: Metric| metric.request_value_s(record).map(ms);
    CsvRow {
        run,
        index: record.index,
        client_id: record.client_id,
        model: record.model.as_deref().unwrap_or(""),
        conversation_id: record.conversation.map(|(id, _)| id),
        turn_index: record.conversation.map(|(_, turn)| turn),
        target_send_s: record.target_send_s,
        actual_send_s: record.actual_send_s,
        sent_unix_s: start_unix_s + record.actual_send_s,
        client_queue_time_ms: ms(record.send_lag_s()),
        ttft_ms: value_ms(Metric::Ttft),
        ttst_ms: value_ms(Metric::TimeToSecondToken),
        tpot_ms: value_ms(Metric::Tpot),
        itl_mean_ms: (!gaps_s.is_empty())
            .then(|| ms(gaps_s.iter().sum::<f64>()) / gaps_s.len() as f64),
        itl_max_ms: gaps_s.iter().copied().reduce(f64::max).map(ms),
        e2el_ms: ms(record.e2el_s()),
        num_chunks: record.chunk_times_s.len(),
        input_tokens: record.input_tokens,
        output_tokens: record.output_tokens,
        expected_output_tokens: record.expected_output_tokens,
        token_count_source: match record.token_count_source {
            TokenCountSource::ServerUsage => "server_usage",
            TokenCountSource::Tokenizer => "tokenizer",
        },
        num_retries: record.num_retries,
        error: record.error.as_ref().map(error_label).unwrap_or_default(),
        error_message: record.error_message.as_deref().unwrap_or(""),
    }
}

/// Writes a header and one row per request of every run, runs in order, requests by index.
pub fn write_csv(out: impl Write, runs: &[RunRecords<'_>]) -> Result<(), csv::Error> {
    let mut writer = csv::Writer::from_writer(out);
    for (run_index, run) in runs.iter().enumerate() {
        let mut records: Vec<&RequestRecord> = run.records.iter().collect();
        records.sort_by_key(|record| (record.client_id, record.index));
        for record in records {
            writer.serialize(row(run_index + 1, run.start_unix_s, record))?;
        }
    }
    writer.flush()?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;
    use crate::stats::test_records::streamed;

    fn parse(bytes: &[u8]) -> Vec<csv::StringRecord> {
        csv::Reader::from_reader(bytes)
            .records()
            .map(Result::unwrap)
            .collect()
    }

    fn header(bytes: &[u8]) -> Vec<String> {
        let mut reader = csv::Reader::from_reader(bytes);
        reader.headers().unwrap().iter().map(String::from).collect()
    }

    fn cell<'a>(headers: &[String], row: &'a csv::StringRecord, name: &str) -> &'a str {
        let column = headers.iter().position(|h| h == name).unwrap();
        row.get(column).unwrap()
    }

    fn close(text: &str, expected: f64) {
        let value: f64 = text.parse().unwrap();
        assert!((value - expected).abs() < 1e-9, "{value} vs {expected}");
    }

    #[test]
    fn a_row_holds_the_request_metrics_in_milliseconds() {
        // Due at 1.0, sent at 1.25; chunks at 1.5, 1.75, 2.25; ends at 2.5; 5 tokens.
        let record = streamed(3, 1.0, 1.25, &[1.5, 1.75, 2.25], 2.5, 5);
        let mut out = Vec::new();
        let runs = [RunRecords {
            start_unix_s: 1_000.0,
            records: std::slice::from_ref(&record),
        }];
        write_csv(&mut out, &runs).unwrap();
        let (headers, rows) = (header(&out), parse(&out));
        assert_eq!(rows.len(), 1);
        let value = |name: &str| cell(&headers, &rows[0], name);
        assert_eq!(value("run"), "1");
        assert_eq!(value("index"), "3");
        assert_eq!(value("model"), "base");
        close(value("sent_unix_s"), 1_001.25);
        close(value("client_queue_time_ms"), 250.0);
        close(value("ttft_ms"), 250.0);
        close(value("ttst_ms"), 500.0);
        close(value("tpot_ms"), 250.0);
        close(value("itl_mean_ms"), 375.0);
        close(value("itl_max_ms"), 500.0);
        close(value("e2el_ms"), 1_250.0);
        assert_eq!(value("num_chunks"), "3");
        assert_eq!(value("output_tokens"), "5");
        assert_eq!(value("token_count_source"), "server_usage");
        assert_eq!(value("error"), "");
        assert_eq!(value("conversation_id"), "");
    }

    #[test]
    fn a_failure_has_empty_latencies_and_a_quoted_message() {
        let mut failed = streamed(0, 0.0, 0.0, &[], 0.5, 0);
        failed.error = Some(ErrorKind::Http(400));
        failed.error_message = Some("bad \"max_tokens\", line 1\nsecond line".into());
        failed.conversation = Some((7, 2));
        let ok = streamed(1, 0.0, 0.1, &[0.2], 0.3, 1);
        let mut out = Vec::new();
        let runs = [
            RunRecords {
                start_unix_s: 0.0,
                records: &[ok.clone(), failed.clone()],
            },
            RunRecords {
                start_unix_s: 50.0,
                records: std::slice::from_ref(&ok),
            },
        ];
        write_csv(&mut out, &runs).unwrap();
        let (headers, rows) = (header(&out), parse(&out));
        assert_eq!(rows.len(), 3);
        // Sorted by index within a run; runs in order.
        let failed_row = &rows[0];
        assert_eq!(cell(&headers, failed_row, "error"), "http_400");
        assert_eq!(
            cell(&headers, failed_row, "error_message"),
            "bad \"max_tokens\", line 1\nsecond line"
        );
        assert_eq!(cell(&headers, failed_row, "ttft_ms"), "");
        assert_eq!(cell(&headers, failed_row, "itl_mean_ms"), "");
        assert_eq!(cell(&headers, failed_row, "conversation_id"), "7");
        assert_eq!(cell(&headers, failed_row, "turn_index"), "2");
        // One output token: no TPOT, no ITL.
        assert_eq!(cell(&headers, &rows[1], "tpot_ms"), "");
        assert_eq!(cell(&headers, &rows[2], "run"), "2");
        close(cell(&headers, &rows[2], "sent_unix_s"), 50.1);
    }
}
