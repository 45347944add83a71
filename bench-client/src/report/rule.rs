//! The report's layout: section rules (a title centred in a line of `fill` characters) and
//! label–value lines.

use std::fmt::Write;

const WIDTH: usize = 50;

/// One `label value` line, values aligned in one column.
pub(crate) fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{:<40} {value}", label);
}

pub(crate) fn rule(title: &str, fill: char) -> String {
    if title.is_empty() {
        return fill.to_string().repeat(WIDTH);
    }
    let padding = WIDTH.saturating_sub(title.len() + 2);
    let left = padding / 2;
    format!(
        "{} {title} {}",
        fill.to_string().repeat(left),
        fill.to_string().repeat(padding - left)
    )
}
