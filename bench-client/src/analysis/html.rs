//! `pagoda-bench report` and `serve --html`: saved results as one self-contained HTML page.
//!
//! The page holds everything inline: CSS in a `<style>` element, every chart as inline SVG (no
//! namespace URL, no images, no fonts, no script), hover details in SVG `<title>` elements. It
//! fetches nothing, so it opens offline and can be attached to an issue as is. Every string
//! taken from a result (labels, model names, URLs, error texts) is escaped.
//!
//! Sections, each shown when its data is there:
//! - the runs (model, backend, server URL, load) and the summary table (vLLM's keys);
//! - failed requests by kind (HTTP status, timeout, connection, stream);
//! - with several results, the comparison against the first (the baseline), and when their
//!   loads differ (or for a sweep's `summary.json`), the sweep curves with the knee;
//! - from the per-request records (`--save-detailed`, or in memory for `serve --html`): the
//!   TTFT / TPOT / ITL / E2EL distributions (CDF), output throughput and requests in flight
//!   over time, and the per-request timeline (queue → first token → last token);
//! - from `--scrape-metrics`: the server's running and waiting requests (beside the client's
//!   requests in flight), KV-cache usage and preemptions on the client's time axis;
//! - `pagoda.slices` and `pagoda.turns`, when a result has them, as tables and charts.

mod css;
mod distributions;
mod figure;
mod input;
mod itl_timeline_page;
mod json_table;
mod over_time;
mod page;
mod runs_section;
mod server_series;
mod sweep_section;
mod timeline_chart;
mod timeline_sampling;

pub use input::{parse_input, read_input, HtmlError, ReportInput, ReportResult, SweepFile};
pub use itl_timeline_page::itl_timeline_page;
pub use page::{render_report, ReportOptions};
pub use timeline_sampling::MAX_TIMELINE_ROWS;

#[cfg(test)]
mod tests;
