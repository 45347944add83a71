//! BurstGPT traces (github.com/HPMLL/BurstGPT, `data/`): CSV with the header
//! `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type` (newer files add
//! `Session ID` and `Elapsed time`); columns are found by name, so either layout reads. The
//! timestamp is in seconds. Rows whose `Response tokens` is 0 are the service's failed requests
//! (the `*_without_fails_*` files leave them out); they are kept here and skipped by the replay
//! like any record without input or output. `model` keeps one model's rows (`ChatGPT`, `GPT-4`).

use std::collections::BTreeSet;

use super::csv::{parse_count, CsvTable};
use super::request::{LineError, ParsedTrace, TraceRequest};

pub(super) fn parse(text: &str, model: Option<&str>) -> Result<ParsedTrace, LineError> {
    let table = CsvTable::parse(text)?;
    let timestamp = table.column("Timestamp")?;
    let model_column = table.column("Model")?;
    let request_tokens = table.column("Request tokens")?;
    let response_tokens = table.column("Response tokens")?;
    let mut parsed = ParsedTrace::default();
    let mut models_seen = BTreeSet::new();
    for record in table.records() {
        let (line, fields) = record?;
        parsed.num_records += 1;
        let row_model = fields[model_column].trim();
        if let Some(wanted) = model {
            if !row_model.eq_ignore_ascii_case(wanted) {
                models_seen.insert(row_model.to_string());
                continue;
            }
        }
        let error = |message: String| LineError::new(line, message);
        let timestamp_s = parse_seconds(&fields[timestamp]).map_err(error)?;
        parsed.requests.push(TraceRequest {
            timestamp_s,
            input_tokens: parse_count(&fields[request_tokens], "Request tokens").map_err(error)?,
            output_tokens: parse_count(&fields[response_tokens], "Response tokens")
                .map_err(error)?,
            hash_ids: Vec::new(),
        });
    }
    if let Some(wanted) = model {
        if parsed.requests.is_empty() && parsed.num_records > 0 {
            let seen: Vec<String> = models_seen.into_iter().collect();
            return Err(LineError::new(
                1,
                format!(
                    "no row has Model {wanted:?} (models in the file: {})",
                    seen.join(", ")
                ),
            ));
        }
    }
    Ok(parsed)
}

fn parse_seconds(field: &str) -> Result<f64, String> {
    match field.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() => Ok(seconds),
        _ => Err(format!("Timestamp {field:?} is not a number of seconds")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
        5,ChatGPT,472,18,490,Conversation log\n\
        45.5,ChatGPT,1087,230,1317,Conversation log\n\
        118,GPT-4,417,276,693,Conversation log\n\
        120,GPT-4,300,0,300,API log\n";

    #[test]
    fn reads_every_row_in_seconds() {
        let parsed = parse(SAMPLE, None).unwrap();
        assert_eq!(parsed.num_records, 4);
        let requests = &parsed.requests;
        assert_eq!(requests.len(), 4);
        assert_eq!(
            requests[1],
            TraceRequest {
                timestamp_s: 45.5,
                input_tokens: 1087,
                output_tokens: 230,
                hash_ids: vec![],
            }
        );
        // A failed request is read as it is (0 response tokens); the replay skips it.
        assert_eq!(requests[3].output_tokens, 0);
    }

    #[test]
    fn a_model_filter_keeps_that_models_rows() {
        let parsed = parse(SAMPLE, Some("gpt-4")).unwrap();
        assert_eq!(parsed.num_records, 4);
        let times: Vec<f64> = parsed.requests.iter().map(|r| r.timestamp_s).collect();
        assert_eq!(times, [118.0, 120.0]);
        let error = parse(SAMPLE, Some("Claude")).unwrap_err();
        assert!(
            error.message.contains("models in the file: ChatGPT, GPT-4"),
            "{error:?}"
        );
    }

    #[test]
    fn the_newer_layout_with_session_columns_reads_too() {
        let text = "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
            0.25,abc,1.5,ChatGPT,10,20,30,Conversation log\n";
        let parsed = parse(text, None).unwrap();
        assert_eq!(parsed.requests[0].input_tokens, 10);
        assert_eq!(parsed.requests[0].output_tokens, 20);
    }

    #[test]
    fn malformed_rows_are_named_by_line() {
        let header = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
        for (row, expected) in [
            ("x,ChatGPT,1,2,3,a", "Timestamp \"x\""),
            ("1,ChatGPT,-1,2,3,a", "Request tokens"),
            ("1,ChatGPT,1,2.5,3,a", "Response tokens"),
            ("1,ChatGPT,1,2", "4 fields, but the header has 6"),
        ] {
            let text = format!("{header}1,ChatGPT,1,1,2,a\n{row}\n");
            let error = parse(&text, None).unwrap_err();
            assert_eq!(error.line, 3, "{row}");
            assert!(error.message.contains(expected), "{row}: {error:?}");
        }
        let error = parse("Timestamp,Request tokens\n1,2\n", None).unwrap_err();
        assert!(error.message.contains("no column \"Model\""), "{error:?}");
    }
}
