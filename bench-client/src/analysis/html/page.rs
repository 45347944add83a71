//! [`render_report`]: the whole page, section by section (see the module's doc).

use super::css::CSS;
use super::distributions::distributions_section;
use super::figure::{escape, note, section, svg_figure};
use super::input::{HtmlError, ReportInput, ReportResult, SweepFile};
use super::json_table::{slices_html, turns_html};
use super::over_time::over_time_section;
use super::runs_section::{comparison_section, errors_section, summary_section};
use super::server_series::server_charts;
use super::sweep_section::sweeps_body;
use super::timeline_chart::timeline_svg;
use super::timeline_sampling::MAX_TIMELINE_ROWS;

/// How the page is titled and how the comparison flags regressions.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    pub title: String,
    /// As `compare --regression-threshold-pct`.
    pub regression_threshold_pct: f64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            title: "pagoda-bench report".into(),
            regression_threshold_pct: 5.0,
        }
    }
}

/// The report of `inputs` (results and sweep summaries, in order; the first result is the
/// comparison's baseline) as one self-contained HTML document.
pub fn render_report(inputs: &[ReportInput], options: &ReportOptions) -> Result<String, HtmlError> {
    if inputs.is_empty() {
        return Err(HtmlError::NoInputs);
    }
    let results: Vec<&ReportResult> = inputs
        .iter()
        .filter_map(|input| match input {
            ReportInput::Result(result) => Some(result.as_ref()),
            ReportInput::Sweep(_) => None,
        })
        .collect();
    let sweeps: Vec<&SweepFile> = inputs
        .iter()
        .filter_map(|input| match input {
            ReportInput::Sweep(sweep) => Some(sweep),
            ReportInput::Result(_) => None,
        })
        .collect();
    let mut sections: Vec<(&str, &str, String)> = Vec::new();
    if !results.is_empty() {
        sections.push(("summary", "Summary", summary_section(&results)));
        sections.push(("errors", "Errors", errors_section(&results)));
        if results.len() > 1 {
            let threshold = options.regression_threshold_pct;
            sections.push((
                "comparison",
                "Comparison",
                comparison_section(&results, threshold),
            ));
        }
    }
    let sweep_body = sweeps_body(&results, &sweeps);
    if !sweep_body.is_empty() {
        sections.push((
            "sweep",
            "Sweep",
            section("sweep", "Sweep curves", &sweep_body),
        ));
    }
    if !results.is_empty() {
        sections.push((
            "distributions",
            "Distributions",
            distributions_section(&results),
        ));
        sections.push(("over-time", "Over time", over_time_section(&results)));
        sections.push(("timeline", "Timeline", timeline_section(&results)));
        sections.push(("server", "Server metrics", server_section(&results)));
        let extra = extra_section(&results);
        if !extra.is_empty() {
            sections.push(("slices-turns", "Slices and turns", extra));
        }
    }
    Ok(document(options, &results, &sweeps, &sections))
}

fn document(
    options: &ReportOptions,
    results: &[&ReportResult],
    sweeps: &[&SweepFile],
    sections: &[(&str, &str, String)],
) -> String {
    let nav: String = sections
        .iter()
        .map(|(id, name, _)| format!("<a href=\"#{}\">{}</a>", escape(id), escape(name)))
        .collect();
    let body: String = sections.iter().map(|(_, _, html)| html.as_str()).collect();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <p class=\"meta\">{meta}</p>\n<nav>{nav}</nav>\n{body}</body>\n</html>\n",
        title = escape(&options.title),
        meta = escape(&format!(
            "pagoda-bench {}: {} result(s), {} sweep summary file(s). Self-contained: nothing \
             here is fetched from anywhere.",
            env!("CARGO_PKG_VERSION"),
            results.len(),
            sweeps.len()
        )),
    )
}

fn timeline_section(results: &[&ReportResult]) -> String {
    let mut body = note(&format!(
        "One bar per request in order of scheduled send time: grey = waiting in the client \
         (scheduled → sent), orange = time to first token, blue = decoding (first → last \
         token), red = failed. Over {MAX_TIMELINE_ROWS} requests every k-th is drawn (k = \
         ⌈n ÷ {MAX_TIMELINE_ROWS}⌉). Hover a bar for its numbers."
    ));
    for (index, result) in results.iter().enumerate() {
        match &result.records {
            Some(records) => {
                let title = format!("Per-request timeline: {}", result.label);
                body.push_str(&svg_figure(
                    &format!("chart-timeline-{index}"),
                    &timeline_svg(records, &title),
                    "",
                ));
            }
            None => body.push_str(&note(&format!(
                "{}: the timeline needs the per-request records (serve --save-detailed).",
                result.label
            ))),
        }
    }
    section("timeline", "Per-request timeline", &body)
}

fn server_section(results: &[&ReportResult]) -> String {
    let mut body = note(
        "The server's own gauges from its /metrics (serve --scrape-metrics), on the client's \
         time axis. A peak between two scrapes is not seen: scrape more often to see more.",
    );
    for (index, result) in results.iter().enumerate() {
        body.push_str(&format!("<h3>{}</h3>\n", escape(&result.label)));
        body.push_str(&server_charts(result, index));
    }
    section("server", "Server metrics over time", &body)
}

fn extra_section(results: &[&ReportResult]) -> String {
    let body: String = results
        .iter()
        .enumerate()
        .map(|(index, r)| format!("{}{}", slices_html(r, index), turns_html(r, index)))
        .collect();
    if body.is_empty() {
        return String::new();
    }
    section("slices-turns", "Time slices and conversation turns", &body)
}
