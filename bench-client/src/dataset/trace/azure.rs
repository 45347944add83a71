//! Azure LLM inference traces (github.com/Azure/AzurePublicDataset,
//! `data/AzureLLMInferenceTrace_{code,conv}.csv` and the 2024 week-long files): CSV
//! `TIMESTAMP,ContextTokens,GeneratedTokens`, the timestamp a UTC date and time such as
//! `2023-11-16 18:15:46.6805900` (any number of fractional digits; a `T` separator and a `Z` or
//! `±HH:MM` suffix are accepted too).

use super::csv::{parse_count, CsvTable};
use super::request::{LineError, ParsedTrace, TraceRequest};

pub(super) fn parse(text: &str) -> Result<ParsedTrace, LineError> {
    let table = CsvTable::parse(text)?;
    let timestamp = table.column("TIMESTAMP")?;
    let context_tokens = table.column("ContextTokens")?;
    let generated_tokens = table.column("GeneratedTokens")?;
    let mut parsed = ParsedTrace::default();
    for record in table.records() {
        let (line, fields) = record?;
        let error = |message: String| LineError::new(line, message);
        parsed.requests.push(TraceRequest {
            timestamp_s: parse_datetime_s(&fields[timestamp]).map_err(error)?,
            input_tokens: parse_count(&fields[context_tokens], "ContextTokens").map_err(error)?,
            output_tokens: parse_count(&fields[generated_tokens], "GeneratedTokens")
                .map_err(error)?,
            hash_ids: Vec::new(),
        });
        parsed.num_records += 1;
    }
    Ok(parsed)
}

/// `YYYY-MM-DD HH:MM:SS[.fraction][Z|±HH:MM]` → seconds since the Unix epoch (UTC).
fn parse_datetime_s(field: &str) -> Result<f64, String> {
    let field = field.trim();
    let invalid =
        || format!("TIMESTAMP {field:?} is not a date and time like 2023-11-16 18:15:46.68");
    let (date, rest) = field.split_at_checked(10).ok_or_else(invalid)?;
    let time = rest
        .strip_prefix(' ')
        .or_else(|| rest.strip_prefix('T'))
        .ok_or_else(invalid)?;
    let (time, offset_s) = split_offset(time).ok_or_else(invalid)?;
    let [year, month, day] = numbers(date, '-').ok_or_else(invalid)?;
    let (clock, fraction) = time.split_once('.').unwrap_or((time, ""));
    let [hour, minute, second] = numbers(clock, ':').ok_or_else(invalid)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return Err(invalid());
    }
    if second > 60 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let fraction_s = if fraction.is_empty() {
        0.0
    } else {
        format!("0.{fraction}")
            .parse::<f64>()
            .map_err(|_| invalid())?
    };
    let days = days_from_civil(year, month, day);
    let whole_s = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Ok(whole_s as f64 + fraction_s)
}

/// The time without its zone suffix, and the zone's offset east of UTC in seconds.
fn split_offset(time: &str) -> Option<(&str, i64)> {
    if let Some(time) = time.strip_suffix('Z') {
        return Some((time, 0));
    }
    let Some(sign_at) = time.rfind(['+', '-']) else {
        return Some((time, 0));
    };
    let (time, zone) = time.split_at(sign_at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let (hours, minutes) = zone[1..].split_once(':')?;
    let hours: i64 = hours.parse().ok()?;
    let minutes: i64 = minutes.parse().ok()?;
    Some((time, sign * (hours * 3600 + minutes * 60)))
}

/// Three whole numbers separated by `separator`.
fn numbers(text: &str, separator: char) -> Option<[i64; 3]> {
    let mut parts = text.split(separator).map(|part| {
        (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<i64>().ok())
            .flatten()
    });
    let numbers = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(numbers)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_are_seconds_since_the_epoch() {
        assert_eq!(parse_datetime_s("1970-01-01 00:00:00").unwrap(), 0.0);
        // 2023-11-16 18:15:46 UTC is 1700158546 (`date -u -d ... +%s`).
        let t = parse_datetime_s("2023-11-16 18:15:46.6805900").unwrap();
        assert!((t - 1_700_158_546.680_59).abs() < 1e-6, "{t}");
        assert_eq!(
            parse_datetime_s("2000-02-29T12:00:00Z").unwrap(),
            951_825_600.0
        );
        assert_eq!(
            parse_datetime_s("2024-05-10 02:00:00+02:00").unwrap(),
            parse_datetime_s("2024-05-10 00:00:00").unwrap()
        );
        // Across a year's end and a leap day, differences are exact.
        let a = parse_datetime_s("2023-12-31 23:59:59.5").unwrap();
        let b = parse_datetime_s("2024-01-01 00:00:00.25").unwrap();
        assert!((b - a - 0.75).abs() < 1e-6);
    }

    #[test]
    fn malformed_datetimes_are_refused() {
        for bad in [
            "",
            "2023-11-16",
            "2023-11-16 18:15",
            "2023-13-16 18:15:46",
            "2023-11-16 25:15:46",
            "2023/11/16 18:15:46",
            "2023-11-16 18:15:46.x",
            "1700158546",
        ] {
            assert!(parse_datetime_s(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_rows_with_their_lengths() {
        let text = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
            2023-11-16 18:15:46.6805900,374,44\n\
            2023-11-16 18:15:50.9951690,396,109\n";
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.num_records, 2);
        let [a, b] = &parsed.requests[..] else {
            panic!("two requests")
        };
        assert_eq!((a.input_tokens, a.output_tokens), (374, 44));
        assert_eq!((b.input_tokens, b.output_tokens), (396, 109));
        assert!((b.timestamp_s - a.timestamp_s - 4.314579).abs() < 1e-6);
    }

    #[test]
    fn malformed_rows_are_named_by_line() {
        let header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
        let good = "2023-11-16 18:15:46.6805900,374,44\n";
        for (row, expected) in [
            ("yesterday,1,2", "TIMESTAMP \"yesterday\""),
            ("2023-11-16 18:15:46,x,2", "ContextTokens"),
            ("2023-11-16 18:15:46,1,-2", "GeneratedTokens"),
            ("2023-11-16 18:15:46,1", "2 fields"),
        ] {
            let error = parse(&format!("{header}{good}{good}{row}\n")).unwrap_err();
            assert_eq!(error.line, 4, "{row}");
            assert!(error.message.contains(expected), "{row}: {error:?}");
        }
    }
}
