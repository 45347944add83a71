//! Results at different loads as a sweep: the sweep's three charts (throughput vs p99 latency,
//! TTFT and ITL vs load) with the knee marked, and one row per load. The loads come from the
//! results' `request_rate` (when they differ) else `max_concurrency`, or from a sweep's own
//! `summary.json`.

use super::figure::{charts_row, dotted_figure, escape, note, number, table};
use super::input::{ReportResult, SweepFile};
use crate::analysis::compare::metric;
use crate::analysis::plot::{sweep_charts, Series};
use crate::analysis::sweep::summary::METRIC_COLUMNS;
use crate::analysis::sweep::{
    find_knee, summarize, KneeCriteria, SweepAxis, SweepPoint, SweepSummary,
};

/// The axis along which the results' loads differ, with each result's load; `None` when every
/// result ran at the same load. Results at an unlimited rate are left out of a rate axis.
pub fn load_axis(results: &[&ReportResult]) -> Option<(SweepAxis, Vec<SweepPoint>)> {
    let loads = |key: &str| -> Vec<Option<f64>> {
        results.iter().map(|r| metric(&r.result, key)).collect()
    };
    let differ = |values: &[Option<f64>]| values.iter().any(|v| *v != values[0]);
    let rates = loads("request_rate");
    let concurrencies = loads("max_concurrency");
    let (axis, values) = if results.len() > 1 && differ(&rates) {
        (SweepAxis::RequestRate(Vec::new()), rates)
    } else if results.len() > 1 && differ(&concurrencies) {
        (SweepAxis::Concurrency(Vec::new()), concurrencies)
    } else {
        return None;
    };
    let points: Vec<SweepPoint> = results
        .iter()
        .zip(values)
        .filter_map(|(r, load)| {
            let load = load.filter(|l| l.is_finite())?;
            let source = r
                .result
                .pointer("/pagoda/runs/aggregate")
                .unwrap_or(&r.result);
            Some(SweepPoint {
                load,
                result: source.clone(),
            })
        })
        .collect();
    (points.len() > 1).then_some((axis, points))
}

/// The knee's marker on each standard sweep chart, by chart name.
fn knee_marker(summary: &SweepSummary, chart_name: &str, knee_load: f64) -> Option<Series> {
    let row = summary.rows.iter().find(|r| r.load == knee_load)?;
    let point = match chart_name {
        "throughput_vs_p99_latency" => (row.output_throughput?, row.p99_ttft_ms?),
        "ttft_vs_load" => (row.load, row.p99_ttft_ms?),
        "itl_vs_load" => (row.load, row.p99_itl_ms?),
        _ => return None,
    };
    Some(Series {
        label: format!("knee ({} = {})", summary.load_key, knee_load),
        points: vec![point],
    })
}

/// The charts, the knee and the table of one sweep; `index` makes the chart ids unique.
pub fn sweep_html(summary: &SweepSummary, title: &str, index: usize) -> String {
    let criteria = KneeCriteria::default();
    let knee = find_knee(&summary.rows, &criteria);
    let knee_text = match &knee {
        Some(k) => format!(
            "Knee: {} = {} ({:.1} output tok/s). Going to {} turned only {:.0}% of the extra \
             load into throughput while {} rose {:.0}%.",
            summary.load_key,
            k.load,
            k.output_throughput,
            k.next_load,
            k.gain_ratio_pct,
            criteria.latency.key(),
            k.latency_rise_pct
        ),
        None => format!(
            "No knee: throughput kept up with the load (or {} did not rise) at every step.",
            criteria.latency.key()
        ),
    };
    let figures: Vec<String> = sweep_charts(summary)
        .into_iter()
        .map(|mut named| {
            if let Some(marker) = knee
                .as_ref()
                .and_then(|k| knee_marker(summary, named.name, k.load))
            {
                named.chart.series.push(marker);
            }
            dotted_figure(
                &format!("chart-sweep-{index}-{}", named.name),
                &named.chart,
                "",
            )
        })
        .collect();
    let header: Vec<String> = std::iter::once(summary.load_key.to_string())
        .chain(METRIC_COLUMNS.iter().map(|c| c.to_string()))
        .collect();
    let rows: Vec<Vec<String>> = summary
        .rows
        .iter()
        .map(|row| {
            std::iter::once(number(Some(row.load)))
                .chain(row.cells().into_iter().map(number))
                .collect()
        })
        .collect();
    format!(
        "<h3>{}</h3>\n<p class=\"knee\">{}</p>\n{}{}",
        escape(title),
        escape(&knee_text),
        charts_row(&figures),
        table(&header, &rows)
    )
}

/// The sweep made of the results (when their loads differ) and of every sweep file; empty
/// when there is neither.
pub fn sweeps_body(results: &[&ReportResult], sweeps: &[&SweepFile]) -> String {
    let mut out = String::new();
    let mut index = 0;
    if let Some((axis, points)) = load_axis(results) {
        let summary = summarize(&axis, &points);
        out.push_str(&sweep_html(&summary, "The results as a sweep", index));
        index += 1;
    }
    for file in sweeps {
        out.push_str(&sweep_html(&file.summary, &file.label, index));
        index += 1;
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            &note(
                "The knee is the last load before throughput stopped following the load (less \
                 than half of the extra load became throughput) while p99 TTFT rose by more \
                 than 20% (see docs/bench.md, Sweeps).",
            ),
        );
    }
    out
}
