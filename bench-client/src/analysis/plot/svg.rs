//! A chart as a self-contained SVG: title, framed plot area with grid, nice ticks, axis labels
//! with units, one polyline with point markers per series, and a legend. Text asks for common
//! sans-serif families and falls back to the viewer's `sans-serif`; nothing external is linked.

use std::fmt::Write;

use super::chart::{Chart, HEIGHT_PX, WIDTH_PX};
use super::ticks::Axis;

/// Colour-blind-safe series colours (Okabe–Ito), used in order.
pub const SERIES_COLORS: [&str; 6] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];
const FONT_FAMILY: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
const MARGIN_LEFT_PX: f64 = 84.0;
const MARGIN_RIGHT_PX: f64 = 28.0;
const MARGIN_TOP_PX: f64 = 52.0;
const MARGIN_BOTTOM_PX: f64 = 64.0;
const MAX_NUM_TICKS: usize = 6;

/// The plot area in pixels and the axes mapped onto it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub x_axis: Axis,
    pub y_axis: Axis,
    pub left_px: f64,
    pub top_px: f64,
    pub width_px: f64,
    pub height_px: f64,
}

impl Frame {
    /// Axes that cover every finite point of the chart.
    pub fn of(chart: &Chart) -> Self {
        let points: Vec<(f64, f64)> = chart.finite_points().collect();
        let range = |pick: fn(&(f64, f64)) -> f64| {
            let values = points.iter().map(pick);
            let min = values.clone().fold(f64::INFINITY, f64::min);
            (min, values.fold(f64::NEG_INFINITY, f64::max))
        };
        let (x_min, x_max) = range(|p| p.0);
        let (y_min, y_max) = range(|p| p.1);
        Self {
            x_axis: Axis::covering(x_min, x_max, MAX_NUM_TICKS),
            y_axis: Axis::covering(y_min, y_max, MAX_NUM_TICKS),
            left_px: MARGIN_LEFT_PX,
            top_px: MARGIN_TOP_PX,
            width_px: f64::from(WIDTH_PX) - MARGIN_LEFT_PX - MARGIN_RIGHT_PX,
            height_px: f64::from(HEIGHT_PX) - MARGIN_TOP_PX - MARGIN_BOTTOM_PX,
        }
    }

    /// The pixel position of a data point (y grows downwards in SVG).
    pub fn to_px(&self, x: f64, y: f64) -> (f64, f64) {
        (
            self.left_px + self.x_axis.fraction(x) * self.width_px,
            self.top_px + (1.0 - self.y_axis.fraction(y)) * self.height_px,
        )
    }

    fn bottom_px(&self) -> f64 {
        self.top_px + self.height_px
    }

    fn right_px(&self) -> f64 {
        self.left_px + self.width_px
    }
}

/// Escapes text for XML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The chart as an SVG document of `WIDTH_PX × HEIGHT_PX`.
pub fn render_svg(chart: &Chart) -> String {
    let element = svg_element(chart, r#" xmlns="http://www.w3.org/2000/svg""#, true);
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{element}")
}

/// The chart as an `<svg>` element to inline in an HTML page: no XML prolog and no namespace
/// (HTML5 parses inline SVG without one), so the page holds no URL at all. `markers`: a dot
/// on every point (a sweep's few loads), or lines only (distributions, time series).
pub fn render_inline_svg(chart: &Chart, markers: bool) -> String {
    svg_element(chart, "", markers)
}

fn svg_element(chart: &Chart, namespace: &str, markers: bool) -> String {
    let frame = Frame::of(chart);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg{namespace} width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT_FAMILY}">
<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>
<text x="{cx:.1}" y="30" font-size="18" font-weight="bold" text-anchor="middle" fill="#222222">{title}</text>
"##,
        w = WIDTH_PX,
        h = HEIGHT_PX,
        cx = frame.left_px + frame.width_px / 2.0,
        title = escape(&chart.title),
    );
    write_grid_and_ticks(&mut svg, &frame);
    write_axis_labels(&mut svg, &frame, chart);
    write_series(&mut svg, &frame, chart, markers);
    write_legend(&mut svg, &frame, chart, markers);
    if chart.finite_points().next().is_none() {
        let (cx, cy) = (
            frame.left_px + frame.width_px / 2.0,
            frame.top_px + frame.height_px / 2.0,
        );
        let _ = writeln!(
            svg,
            r##"<text x="{cx:.1}" y="{cy:.1}" font-size="16" text-anchor="middle" fill="#888888">no data</text>"##
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn write_grid_and_ticks(svg: &mut String, frame: &Frame) {
    let (bottom, right) = (frame.bottom_px(), frame.right_px());
    for value in frame.x_axis.ticks() {
        let (x, _) = frame.to_px(value, frame.y_axis.min);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.2}" y1="{top:.2}" x2="{x:.2}" y2="{bottom:.2}" stroke="#e4e4e4" stroke-width="1"/><line x1="{x:.2}" y1="{bottom:.2}" x2="{x:.2}" y2="{tick:.2}" stroke="#444444" stroke-width="1"/><text x="{x:.2}" y="{label:.2}" font-size="12" text-anchor="middle" fill="#333333">{text}</text>"##,
            top = frame.top_px,
            tick = bottom + 5.0,
            label = bottom + 20.0,
            text = escape(&frame.x_axis.label(value)),
        );
    }
    for value in frame.y_axis.ticks() {
        let (_, y) = frame.to_px(frame.x_axis.min, value);
        let _ = writeln!(
            svg,
            r##"<line x1="{left:.2}" y1="{y:.2}" x2="{right:.2}" y2="{y:.2}" stroke="#e4e4e4" stroke-width="1"/><line x1="{tick:.2}" y1="{y:.2}" x2="{left:.2}" y2="{y:.2}" stroke="#444444" stroke-width="1"/><text x="{label:.2}" y="{baseline:.2}" font-size="12" text-anchor="end" fill="#333333">{text}</text>"##,
            left = frame.left_px,
            tick = frame.left_px - 5.0,
            label = frame.left_px - 8.0,
            baseline = y + 4.0,
            text = escape(&frame.y_axis.label(value)),
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="none" stroke="#444444" stroke-width="1"/>"##,
        frame.left_px, frame.top_px, frame.width_px, frame.height_px
    );
}

fn write_axis_labels(svg: &mut String, frame: &Frame, chart: &Chart) {
    let center_x = frame.left_px + frame.width_px / 2.0;
    let center_y = frame.top_px + frame.height_px / 2.0;
    let _ = writeln!(
        svg,
        r##"<text x="{center_x:.2}" y="{:.2}" font-size="14" text-anchor="middle" fill="#222222">{}</text>"##,
        frame.bottom_px() + 46.0,
        escape(&chart.x_label),
    );
    let _ = writeln!(
        svg,
        r##"<text x="22" y="{center_y:.2}" font-size="14" text-anchor="middle" fill="#222222" transform="rotate(-90 22 {center_y:.2})">{}</text>"##,
        escape(&chart.y_label),
    );
}

fn write_series(svg: &mut String, frame: &Frame, chart: &Chart, markers: bool) {
    for (index, series) in chart.series.iter().enumerate() {
        let color = SERIES_COLORS[index % SERIES_COLORS.len()];
        let pixels: Vec<(f64, f64)> = series
            .finite_points()
            .map(|(x, y)| frame.to_px(x, y))
            .collect();
        if pixels.len() >= 2 {
            let coordinates: Vec<String> = pixels
                .iter()
                .map(|(x, y)| format!("{x:.2},{y:.2}"))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5" stroke-linejoin="round"/>"#,
                coordinates.join(" ")
            );
        }
        if !markers {
            continue;
        }
        for (x, y) in pixels {
            let _ = writeln!(
                svg,
                r#"<circle cx="{x:.2}" cy="{y:.2}" r="4" fill="{color}"/>"#
            );
        }
    }
}

fn write_legend(svg: &mut String, frame: &Frame, chart: &Chart, markers: bool) {
    if chart.series.is_empty() {
        return;
    }
    const ROW_PX: f64 = 20.0;
    let longest = chart
        .series
        .iter()
        .map(|s| s.label.chars().count())
        .max()
        .unwrap_or(0);
    let width = 48.0 + 7.5 * longest as f64;
    let height = 10.0 + ROW_PX * chart.series.len() as f64;
    let (x0, y0) = (frame.left_px + 12.0, frame.top_px + 12.0);
    let _ = writeln!(
        svg,
        r##"<rect x="{x0:.2}" y="{y0:.2}" width="{width:.2}" height="{height:.2}" fill="#ffffff" fill-opacity="0.85" stroke="#bbbbbb" stroke-width="1"/>"##
    );
    for (index, series) in chart.series.iter().enumerate() {
        let color = SERIES_COLORS[index % SERIES_COLORS.len()];
        let y = y0 + 15.0 + ROW_PX * index as f64;
        let marker = if markers {
            format!(
                r#"<circle cx="{:.2}" cy="{y:.2}" r="4" fill="{color}"/>"#,
                x0 + 20.0
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            svg,
            r##"<line x1="{:.2}" y1="{y:.2}" x2="{:.2}" y2="{y:.2}" stroke="{color}" stroke-width="2.5"/>{marker}<text x="{:.2}" y="{:.2}" font-size="12" fill="#222222">{}</text>"##,
            x0 + 8.0,
            x0 + 32.0,
            x0 + 40.0,
            y + 4.0,
            escape(&series.label),
        );
    }
}
