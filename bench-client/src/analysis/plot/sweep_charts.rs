//! [`sweep_charts`]: the three standard charts of a sweep summary.

use super::chart::{Chart, NamedChart, Series};
use crate::analysis::sweep::{SummaryRow, SweepSummary};

fn series(
    label: &str,
    rows: &[SummaryRow],
    x: fn(&SummaryRow) -> Option<f64>,
    y: fn(&SummaryRow) -> Option<f64>,
) -> Series {
    Series {
        label: label.to_string(),
        points: rows
            .iter()
            .filter_map(|row| Some((x(row)?, y(row)?)))
            .collect(),
    }
}

/// The three standard sweep charts.
pub fn sweep_charts(summary: &SweepSummary) -> Vec<NamedChart> {
    let rows = &summary.rows;
    let load = |row: &SummaryRow| Some(row.load);
    let chart = |title: &str, x_label: &str, y_label: &str, series: Vec<Series>| Chart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        series,
    };
    vec![
        NamedChart {
            name: "throughput_vs_p99_latency",
            chart: chart(
                "Output throughput vs p99 latency",
                "Output throughput (tok/s)",
                "p99 latency (ms)",
                vec![
                    series("p99 TTFT", rows, |r| r.output_throughput, |r| r.p99_ttft_ms),
                    series(
                        "p99 E2E latency",
                        rows,
                        |r| r.output_throughput,
                        |r| r.p99_e2el_ms,
                    ),
                ],
            ),
        },
        NamedChart {
            name: "ttft_vs_load",
            chart: chart(
                "Time to first token vs load",
                summary.load_label,
                "TTFT (ms)",
                vec![
                    series("p50 TTFT", rows, load, |r| r.p50_ttft_ms),
                    series("p99 TTFT", rows, load, |r| r.p99_ttft_ms),
                ],
            ),
        },
        NamedChart {
            name: "itl_vs_load",
            chart: chart(
                "Inter-token latency vs load",
                summary.load_label,
                "ITL (ms)",
                vec![
                    series("p50 ITL", rows, load, |r| r.p50_itl_ms),
                    series("p99 ITL", rows, load, |r| r.p99_itl_ms),
                ],
            ),
        },
    ]
}
