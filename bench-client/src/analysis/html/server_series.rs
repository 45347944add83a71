//! The server's own series (`--scrape-metrics`) on the client's time axis: running and waiting
//! requests beside the client's requests in flight, KV-cache usage, and preemptions per scrape
//! interval. A scrape at Unix time `u` is drawn at `u − pagoda.run.start_unix_s`.

use super::figure::{charts_row, line_figure, note, step_points};
use super::input::ReportResult;
use super::over_time::{bin_width_s, concurrency_points, run_end_s};
use crate::analysis::plot::{Chart, Series};
use crate::analysis::scrape::GaugeSample;

const TIME_LABEL: &str = "Time since the run's start (s)";

/// `(t, value)` of one gauge at every scrape that has it, as a step line.
fn gauge_points(
    timeline: &[GaugeSample],
    origin_unix_s: f64,
    value: fn(&GaugeSample) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let changes: Vec<(f64, f64)> = timeline
        .iter()
        .filter_map(|g| Some((g.unix_s - origin_unix_s, value(g)?)))
        .collect();
    let end_t = changes.last().map_or(0.0, |c| c.0);
    step_points(&changes, end_t)
}

/// Preemptions in each interval between two scrapes that read the counter, drawn flat over the
/// interval (a counter that went down was reset: its later value counts).
pub fn preemption_points(timeline: &[GaugeSample], origin_unix_s: f64) -> Vec<(f64, f64)> {
    let readings: Vec<(f64, f64)> = timeline
        .iter()
        .filter_map(|g| Some((g.unix_s - origin_unix_s, g.num_preemptions?)))
        .collect();
    readings
        .windows(2)
        .flat_map(|pair| {
            let ((from_t, before), (to_t, after)) = (pair[0], pair[1]);
            let increase = if after >= before {
                after - before
            } else {
                after
            };
            [(from_t, increase), (to_t, increase)]
        })
        .collect()
}

/// The server's running and waiting requests, and the client's requests in flight when the
/// result has its records: the two views of the same load on one chart.
fn requests_series(result: &ReportResult, timeline: &[GaugeSample], origin: f64) -> Vec<Series> {
    let mut series = vec![
        Series {
            label: "server: running".into(),
            points: gauge_points(timeline, origin, |g| g.num_requests_running),
        },
        Series {
            label: "server: waiting".into(),
            points: gauge_points(timeline, origin, |g| g.num_requests_waiting),
        },
    ];
    if let Some(records) = &result.records {
        series.push(Series {
            label: "client: in flight".into(),
            points: concurrency_points(records, bin_width_s(run_end_s(records))),
        });
    }
    series
}

/// The three charts of one result's scraped series; `index` makes the ids unique.
pub fn server_charts(result: &ReportResult, index: usize) -> String {
    let Some(server) = &result.server_side else {
        return note(&format!(
            "{}: no server metrics (run serve with --scrape-metrics).",
            result.label
        ));
    };
    let (origin, aligned) = match (result.start_unix_s, server.timeline.first()) {
        (Some(start), _) => (start, true),
        (None, Some(first)) => (first.unix_s, false),
        (None, None) => (0.0, false),
    };
    let timeline = &server.timeline;
    let requests = requests_series(result, timeline, origin);
    let chart = |title: &str, y_label: &str, series: Vec<Series>| Chart {
        title: title.into(),
        x_label: TIME_LABEL.into(),
        y_label: y_label.into(),
        series,
    };
    let kv = chart(
        "KV-cache usage",
        "KV-cache usage (%)",
        vec![Series {
            label: "server: KV-cache usage".into(),
            points: gauge_points(timeline, origin, |g| g.kv_cache_usage.map(|u| u * 100.0)),
        }],
    );
    let preemptions = chart(
        "Preemptions per scrape interval",
        "Preemptions",
        vec![Series {
            label: "server: preemptions".into(),
            points: preemption_points(timeline, origin),
        }],
    );
    let caption = format!(
        "{} scrapes of {} ({} failed){}.",
        server.num_scrapes,
        server.metrics_url,
        server.num_failed_scrapes,
        if aligned {
            ""
        } else {
            "; t = 0 is the first scrape (the result has no pagoda.run.start_unix_s)"
        }
    );
    charts_row(&[
        line_figure(
            &format!("chart-server-requests-{index}"),
            &chart("Requests: server vs client", "Requests", requests),
            &caption,
        ),
        line_figure(&format!("chart-kv-cache-{index}"), &kv, ""),
        line_figure(&format!("chart-preemptions-{index}"), &preemptions, ""),
    ])
}
