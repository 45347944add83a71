//! The page's building blocks: a chart in a `<figure>` with an id, a note, a table, a number.

use crate::analysis::plot::render_inline_svg;
pub use crate::analysis::plot::svg::escape;
use crate::analysis::plot::Chart;

/// A line chart (lines only) as an inline SVG figure with `id` (the browser test looks charts
/// up by id) and an optional caption (plain text; escaped here).
pub fn line_figure(id: &str, chart: &Chart, caption: &str) -> String {
    svg_figure(id, &render_inline_svg(chart, false), caption)
}

/// As [`line_figure`], with a dot on every point (few points: a sweep's loads).
pub fn dotted_figure(id: &str, chart: &Chart, caption: &str) -> String {
    svg_figure(id, &render_inline_svg(chart, true), caption)
}

/// Any inline SVG element as a figure.
pub fn svg_figure(id: &str, svg: &str, caption: &str) -> String {
    let caption = if caption.is_empty() {
        String::new()
    } else {
        format!("<figcaption>{}</figcaption>", escape(caption))
    };
    format!(
        "<figure class=\"chart\" id=\"{}\">\n{svg}{caption}</figure>\n",
        escape(id)
    )
}

/// Figures side by side (they wrap on narrow windows).
pub fn charts_row(figures: &[String]) -> String {
    format!("<div class=\"charts\">\n{}</div>\n", figures.concat())
}

/// A plain-text note, escaped.
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", escape(text))
}

/// A section with an anchor (`id`) and a heading; `body` is HTML.
pub fn section(id: &str, title: &str, body: &str) -> String {
    format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n{body}</section>\n",
        escape(id),
        escape(title)
    )
}

/// A table: `header` and `rows` are plain text (escaped here); the first column is left-aligned.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for (index, cell) in header.iter().enumerate() {
        let class = if index == 0 { " class=\"text\"" } else { "" };
        out.push_str(&format!("<th{class}>{}</th>", escape(cell)));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for (index, cell) in row.iter().enumerate() {
            let class = if index == 0 { " class=\"text\"" } else { "" };
            out.push_str(&format!("<td{class}>{}</td>", escape(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A number for a table: integers as such, others with two decimals; `-` when missing.
pub fn number(value: Option<f64>) -> String {
    match value {
        None => "-".to_string(),
        Some(v) if v.is_infinite() => "inf".to_string(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// `[(t0, v0), (t1, v1), …]` held until the next change: a step line (each value drawn flat
/// until the next time), ending at `end_t`.
pub fn step_points(changes: &[(f64, f64)], end_t: f64) -> Vec<(f64, f64)> {
    let mut points = Vec::with_capacity(changes.len() * 2 + 1);
    for (index, &(t, value)) in changes.iter().enumerate() {
        if let Some(&(_, previous)) = index.checked_sub(1).and_then(|i| changes.get(i)) {
            points.push((t, previous));
        }
        points.push((t, value));
    }
    if let Some(&(t, value)) = changes.last() {
        if end_t > t {
            points.push((end_t, value));
        }
    }
    points
}
