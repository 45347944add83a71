//! [`write_charts`]: each chart as an SVG file and a PNG file.

use std::path::{Path, PathBuf};

use super::chart::NamedChart;
use super::error::PlotError;
use super::raster::PngRenderer;
use super::svg::render_svg;

/// What [`write_charts`] wrote, and what it could not draw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WrittenPlots {
    pub paths: Vec<PathBuf>,
    /// E.g. [`NO_FONT_WARNING`](super::raster::NO_FONT_WARNING) once when the PNGs have no text.
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
