//! `serve --plot-timeline` (vLLM's flag): a page of its own beside the result JSON
//! (`<result>.timeline.html`) with each run's per-request timeline, decoding split at every
//! token and coloured by inter-token latency against `--timeline-itl-thresholds`. Self-contained,
//! like the report: inline CSS and SVG, nothing fetched.

use super::css::CSS;
use super::figure::{escape, note, svg_figure};
use super::timeline_chart::{timeline_svg_colored, DecodeColoring};
use super::timeline_sampling::MAX_TIMELINE_ROWS;
use crate::record::RequestRecord;

/// The page for `runs` (a label and its records each), gaps coloured against `thresholds_ms`.
pub fn itl_timeline_page(runs: &[(String, &[RequestRecord])], thresholds_ms: [f64; 2]) -> String {
    let coloring = DecodeColoring::ItlBands {
        thresholds_s: thresholds_ms.map(|ms| ms / 1e3),
    };
    let [low, high] = thresholds_ms;
    let mut body = note(&format!(
        "One bar per request in order of scheduled send time: grey = waiting in the client, \
         orange = time to first token, then every gap between tokens: green under {low} ms, \
         orange under {high} ms, red from {high} ms; red from the send = failed. Over \
         {MAX_TIMELINE_ROWS} requests every k-th is drawn. Hover a bar for its numbers."
    ));
    for (index, (label, records)) in runs.iter().enumerate() {
        let title = format!("Per-request timeline: {label}");
        body.push_str(&svg_figure(
            &format!("chart-itl-timeline-{index}"),
            &timeline_svg_colored(records, &title, coloring),
            "",
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>pagoda-bench timeline</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <h1>Request timeline</h1>\n<p class=\"meta\">{}</p>\n{body}</body>\n</html>\n",
        escape(&format!(
            "pagoda-bench {}: {} run(s). Self-contained: nothing here is fetched from anywhere.",
            env!("CARGO_PKG_VERSION"),
            runs.len()
        ))
    )
}
