//! Charts of a sweep — throughput vs p99 latency, TTFT vs load, ITL vs load — as SVG (written
//! here, readable anywhere) and PNG (the same SVG rasterised; see [`raster`] for fonts).

mod chart;
pub mod dataset_stats;
mod error;
pub mod raster;
pub mod svg;
mod sweep_charts;
pub mod ticks;
mod writer;

pub use chart::{Chart, NamedChart, Series, HEIGHT_PX, WIDTH_PX};
pub use error::PlotError;
pub use raster::{PngRenderer, RenderedPng, NO_FONT_WARNING};
pub use svg::{render_inline_svg, render_svg};
pub use sweep_charts::sweep_charts;
pub use writer::{write_charts, WrittenPlots};

#[cfg(test)]
mod tests;
