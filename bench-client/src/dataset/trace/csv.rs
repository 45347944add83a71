//! The little CSV the trace formats need: a header naming the columns, then one record per line,
//! fields separated by commas, a field optionally in double quotes (`""` inside is a quote).
//! Records never span lines in these traces. Blank lines are skipped.

use super::request::LineError;

/// A CSV text's header and its data lines (with their 1-based line numbers).
pub(super) struct CsvTable<'t> {
    columns: Vec<String>,
    lines: Vec<(usize, &'t str)>,
}

impl<'t> CsvTable<'t> {
    pub fn parse(text: &'t str) -> Result<Self, LineError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(index, line)| (index + 1, line.trim_end_matches('\r')))
            .filter(|(_, line)| !line.trim().is_empty());
        let (header_line, header) = lines
            .next()
            .ok_or_else(|| LineError::new(1, "empty file: expected a CSV header"))?;
        let columns = split(header)
            .map_err(|message| LineError::new(header_line, message))?
            .into_iter()
            .map(|c| c.trim().trim_start_matches('\u{feff}').to_string())
            .collect();
        Ok(Self {
            columns,
            lines: lines.collect(),
        })
    }

    /// The index of the column named `name` (case-insensitive); an error on the header line
    /// naming the columns there are.
    pub fn column(&self, name: &str) -> Result<usize, LineError> {
        self.columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                LineError::new(
                    1,
                    format!(
                        "no column {name:?} in the header (columns: {})",
                        self.columns.join(", ")
                    ),
                )
            })
    }

    /// Every data line's number and fields, each line checked to have the header's width.
    pub fn records(&self) -> impl Iterator<Item = Result<(usize, Vec<String>), LineError>> + '_ {
        self.lines.iter().map(|&(line, text)| {
            let fields = split(text).map_err(|message| LineError::new(line, message))?;
            if fields.len() != self.columns.len() {
                return Err(LineError::new(
                    line,
                    format!(
                        "{} fields, but the header has {} columns",
                        fields.len(),
                        self.columns.len()
                    ),
                ));
            }
            Ok((line, fields))
        })
    }
}

/// One line's fields.
fn split(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if field.trim().is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    fields.push(field);
    Ok(fields)
}

/// A field as a number of tokens (a whole number ≥ 0; `12.0` is accepted).
pub(super) fn parse_count(field: &str, name: &str) -> Result<usize, String> {
    let field = field.trim();
    if let Ok(count) = field.parse::<usize>() {
        return Ok(count);
    }
    match field.parse::<f64>() {
        Ok(value) if value >= 0.0 && value.fract() == 0.0 && value < 1e15 => Ok(value as usize),
        _ => Err(format!("{name} {field:?} is not a whole number ≥ 0")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn splits_plain_and_quoted_fields() {
        assert_eq!(split("a,b,,c").unwrap(), ["a", "b", "", "c"]);
        assert_eq!(
            split("1,\"x, y\",\"say \"\"hi\"\"\"").unwrap(),
            ["1", "x, y", "say \"hi\""]
        );
        assert!(split("1,\"open").is_err());
    }

    #[test]
    fn finds_columns_and_checks_widths() {
        let table = CsvTable::parse("\u{feff}A,b\r\n1,2\r\n\r\n3\n").unwrap();
        assert_eq!(table.column("a").unwrap(), 0);
        assert_eq!(table.column("B").unwrap(), 1);
        let missing = table.column("c").unwrap_err();
        assert!(missing.message.contains("columns: A, b"), "{missing:?}");
        let records: Vec<_> = table.records().collect();
        assert_eq!(records[0], Ok((2, vec!["1".to_string(), "2".to_string()])));
        assert_eq!(records[1].as_ref().unwrap_err().line, 4);
        assert!(CsvTable::parse("\n\n").is_err());
    }

    #[test]
    fn counts_are_whole_numbers() {
        assert_eq!(parse_count(" 12 ", "n"), Ok(12));
        assert_eq!(parse_count("12.0", "n"), Ok(12));
        for bad in ["-1", "1.5", "x", ""] {
            assert!(parse_count(bad, "n").is_err(), "{bad}");
        }
    }
}
