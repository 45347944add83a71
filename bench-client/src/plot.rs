//! Charts of a sweep — throughput vs p99 latency, TTFT vs load, ITL vs load — as SVG (written
//! here, readable anywhere) and PNG (the same SVG rasterised; see [`raster`] for fonts).

pub mod raster;
pub mod svg;
pub mod ticks;

use std::path::{Path, PathBuf};

pub use raster::{PngRenderer, RenderedPng, NO_FONT_WARNING};
pub use svg::render_svg;

use crate::sweep::{SummaryRow, SweepSummary};

/// Every chart's size in SVG pixels (the PNG's at scale 1).
pub const WIDTH_PX: u32 = 800;
pub const HEIGHT_PX: u32 = 500;

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid SVG: {0}")]
    Svg(String),
    #[error("cannot render PNG: {0}")]
    Render(String),
}

/// One labelled line of `(x, y)` points, drawn in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// Points with both coordinates finite (missing metrics and `inf` rates are skipped).
    pub fn finite_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    }
}

/// A line chart; labels carry their units, e.g. "TTFT (ms)".
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

impl Chart {
    pub fn finite_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series.iter().flat_map(Series::finite_points)
    }
}

/// A chart with the file stem it is saved under.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedChart {
    pub name: &'static str,
    pub chart: Chart,
}

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

/// What [`write_charts`] wrote, and what it could not draw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WrittenPlots {
    pub paths: Vec<PathBuf>,
    /// E.g. [`NO_FONT_WARNING`] once when the PNGs have no text.
    pub warnings: Vec<String>,
}

/// Writes `NAME.svg` and `NAME.png` (at `png_scale`) for each chart into `dir` (created).
pub fn write_charts(
    dir: &Path,
    charts: &[NamedChart],
    renderer: &PngRenderer,
    png_scale: f32,
) -> Result<WrittenPlots, PlotError> {
    let write = |path: PathBuf, bytes: &[u8]| {
        std::fs::write(&path, bytes)
            .map(|()| path.clone())
            .map_err(|source| PlotError::Write {
                path: path.display().to_string(),
                source,
            })
    };
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Write {
        path: dir.display().to_string(),
        source,
    })?;
    let mut written = WrittenPlots::default();
    for named in charts {
        let svg = render_svg(&named.chart);
        let png = renderer.render(&svg, png_scale)?;
        written.paths.push(write(
            dir.join(format!("{}.svg", named.name)),
            svg.as_bytes(),
        )?);
        written
            .paths
            .push(write(dir.join(format!("{}.png", named.name)), &png.bytes)?);
        if let Some(warning) = png.warning {
            if !written.warnings.contains(&warning) {
                written.warnings.push(warning);
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
