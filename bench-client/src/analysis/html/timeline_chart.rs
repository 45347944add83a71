//! The per-request timeline: one horizontal bar per request, in send order, split into the wait
//! in the client (scheduled → sent), the time to first token (sent → first token) and decoding
//! (first token → end); a failed request is one red bar from send to failure. Hovering a row
//! shows its numbers (an SVG `<title>`, no script). With [`DecodeColoring::ItlBands`] (vLLM's
//! `--plot-timeline`) decoding is split at every token, each gap coloured by its inter-token
//! latency against two thresholds (runs of one colour drawn as one bar).

use std::fmt::Write;

use super::figure::escape;
use super::timeline_sampling::timeline_rows;
use crate::analysis::plot::svg::SERIES_COLORS;
use crate::analysis::plot::ticks::Axis;
use crate::record::RequestRecord;

const WIDTH_PX: f64 = 800.0;
const LEFT_PX: f64 = 84.0;
const RIGHT_PX: f64 = 28.0;
const TOP_PX: f64 = 78.0;
const BOTTOM_PX: f64 = 64.0;
/// The plot area's height aims at this; rows are 2–12 px high.
const TARGET_PLOT_HEIGHT_PX: f64 = 600.0;
const QUEUE_COLOR: &str = "#999999";
const FAILED_COLOR: &str = "#CC0000";
/// Inter-token gaps below, between and above the two thresholds (vLLM's colours).
const ITL_COLORS: [&str; 3] = ["#109618", "#FF7F0E", "#D62728"];

/// How the decoding part of a bar is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DecodeColoring {
    /// One bar from the first token to the end.
    Plain,
    /// One bar per inter-token gap, coloured by its length against `thresholds_s` (ascending).
    ItlBands { thresholds_s: [f64; 2] },
}

impl DecodeColoring {
    /// `(name, colour)` of each bar segment, for the legend.
    fn legend(self) -> Vec<(String, &'static str)> {
        let mut items = vec![
            ("client queue".to_string(), QUEUE_COLOR),
            ("TTFT".to_string(), SERIES_COLORS[4]),
        ];
        match self {
            DecodeColoring::Plain => items.push(("decode".to_string(), SERIES_COLORS[0])),
            DecodeColoring::ItlBands {
                thresholds_s: [low, high],
            } => {
                let (low, high) = (low * 1e3, high * 1e3);
                items.push((format!("ITL < {low:.0} ms"), ITL_COLORS[0]));
                items.push((format!("{low:.0} ≤ ITL < {high:.0} ms"), ITL_COLORS[1]));
                items.push((format!("ITL ≥ {high:.0} ms"), ITL_COLORS[2]));
            }
        }
        items.push(("failed".to_string(), FAILED_COLOR));
        items
    }

    /// The decoding bars of a request whose first token came at `first_token_s`.
    fn decode_bars(
        self,
        record: &RequestRecord,
        first_token_s: f64,
    ) -> Vec<(f64, f64, &'static str)> {
        let DecodeColoring::ItlBands {
            thresholds_s: [low, high],
        } = self
        else {
            return vec![(first_token_s, record.end_s, SERIES_COLORS[0])];
        };
        let color_of = |gap_s: f64| match gap_s {
            gap if gap < low => ITL_COLORS[0],
            gap if gap < high => ITL_COLORS[1],
            _ => ITL_COLORS[2],
        };
        let mut bars: Vec<(f64, f64, &'static str)> = Vec::new();
        for pair in record.chunk_times_s.windows(2) {
            let color = color_of(pair[1] - pair[0]);
            match bars.last_mut() {
                Some(last) if last.2 == color && last.1 == pair[0] => last.1 = pair[1],
                _ => bars.push((pair[0], pair[1], color)),
            }
        }
        bars
    }
}

/// The timeline of `records` as an inline `<svg>` element titled `title`.
pub fn timeline_svg(records: &[RequestRecord], title: &str) -> String {
    timeline_svg_colored(records, title, DecodeColoring::Plain)
}

/// [`timeline_svg`] with decoding drawn as `coloring` says.
pub fn timeline_svg_colored(
    records: &[RequestRecord],
    title: &str,
    coloring: DecodeColoring,
) -> String {
    let (rows, stride) = timeline_rows(records);
    let row_px = (TARGET_PLOT_HEIGHT_PX / rows.len().max(1) as f64).clamp(2.0, 12.0);
    let plot_height_px = row_px * rows.len().max(1) as f64;
    let height_px = TOP_PX + plot_height_px + BOTTOM_PX;
    let end_s = records.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let axis = Axis::covering(0.0, end_s, 8);
    let plot_width_px = WIDTH_PX - LEFT_PX - RIGHT_PX;
    let x = |t: f64| LEFT_PX + axis.fraction(t) * plot_width_px;
    let mut svg = format!(
        r##"<svg width="{WIDTH_PX}" height="{height_px:.0}" viewBox="0 0 {WIDTH_PX} {height_px:.0}" font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif">
<rect x="0" y="0" width="{WIDTH_PX}" height="{height_px:.0}" fill="#ffffff"/>
<text x="{:.1}" y="30" font-size="18" font-weight="bold" text-anchor="middle" fill="#222222">{}</text>
"##,
        LEFT_PX + plot_width_px / 2.0,
        escape(title)
    );
    write_legend(&mut svg, &coloring.legend());
    let bottom_px = TOP_PX + plot_height_px;
    for tick in axis.ticks() {
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.2}" y1="{TOP_PX}" x2="{px:.2}" y2="{bottom_px:.2}" stroke="#e4e4e4"/><text x="{px:.2}" y="{:.2}" font-size="12" text-anchor="middle" fill="#333333">{}</text>"##,
            bottom_px + 20.0,
            escape(&axis.label(tick)),
            px = x(tick),
        );
    }
    for (row, record) in rows.iter().enumerate() {
        let top = TOP_PX + row as f64 * row_px;
        write_row(
            &mut svg,
            record,
            (top, (row_px * 0.8).max(1.5)),
            coloring,
            &x,
        );
    }
    let sampled = if stride > 1 {
        format!(", every {stride}th of {}", records.len())
    } else {
        String::new()
    };
    let _ = write!(
        svg,
        r##"<rect x="{LEFT_PX}" y="{TOP_PX}" width="{plot_width_px:.2}" height="{plot_height_px:.2}" fill="none" stroke="#444444"/>
<text x="{:.2}" y="{:.2}" font-size="14" text-anchor="middle" fill="#222222">Time since the run's start (s)</text>
<text x="22" y="{cy:.2}" font-size="14" text-anchor="middle" fill="#222222" transform="rotate(-90 22 {cy:.2})">Requests by send time{}</text>
</svg>
"##,
        LEFT_PX + plot_width_px / 2.0,
        bottom_px + 46.0,
        escape(&sampled),
        cy = TOP_PX + plot_height_px / 2.0,
    );
    svg
}

/// The legend in one line, each item as wide as its name (~7 px a character at 12 px).
fn write_legend(svg: &mut String, items: &[(String, &str)]) {
    let mut left = LEFT_PX + 12.0;
    for (name, color) in items {
        let _ = writeln!(
            svg,
            r##"<rect x="{left:.1}" y="46" width="22" height="12" fill="{color}"/><text x="{:.1}" y="57" font-size="12" fill="#222222">{}</text>"##,
            left + 28.0,
            escape(name)
        );
        left += 44.0 + 7.0 * name.chars().count() as f64;
    }
}

/// One request's bar segments inside a `<g>` carrying its tooltip.
fn write_row(
    svg: &mut String,
    record: &RequestRecord,
    (top, height): (f64, f64),
    coloring: DecodeColoring,
    x: &dyn Fn(f64) -> f64,
) {
    let ms = |s: f64| format!("{:.1} ms", s * 1e3);
    let mut tooltip = format!(
        "request {} (client {}): queued {}",
        record.index,
        record.client_id,
        ms(record.send_lag_s())
    );
    let mut bars: Vec<(f64, f64, &str)> = Vec::new();
    if record.actual_send_s > record.target_send_s {
        bars.push((record.target_send_s, record.actual_send_s, QUEUE_COLOR));
    }
    match (&record.error, record.first_token_s) {
        (Some(kind), _) => {
            bars.push((record.actual_send_s, record.end_s, FAILED_COLOR));
            let _ = write!(tooltip, ", failed ({kind:?}) after {}", ms(record.e2el_s()));
        }
        (None, Some(first_token_s)) => {
            bars.push((record.actual_send_s, first_token_s, SERIES_COLORS[4]));
            bars.extend(coloring.decode_bars(record, first_token_s));
            let _ = write!(
                tooltip,
                ", TTFT {}, decode {} ({} tokens)",
                ms(first_token_s - record.actual_send_s),
                ms(record.end_s - first_token_s),
                record.output_tokens
            );
        }
        (None, None) => {
            bars.push((record.actual_send_s, record.end_s, SERIES_COLORS[0]));
            let _ = write!(tooltip, ", no token, E2EL {}", ms(record.e2el_s()));
        }
    }
    let _ = write!(svg, "<g><title>{}</title>", escape(&tooltip));
    for (from_s, to_s, color) in bars {
        let (left, right) = (x(from_s), x(to_s));
        let width = (right - left).max(0.5);
        let _ = write!(
            svg,
            r#"<rect x="{left:.2}" y="{top:.2}" width="{width:.2}" height="{height:.2}" fill="{color}"/>"#
        );
    }
    svg.push_str("</g>\n");
}
