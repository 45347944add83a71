//! The figures `serve` writes beside its result file: `--plot-timeline`'s page and
//! `--plot-dataset-stats`' image, from every run's per-request records.

use std::path::Path;

use anyhow::Context;

use crate::analysis::html::itl_timeline_page;
use crate::analysis::plot::dataset_stats::dataset_stats_svg;
use crate::analysis::plot::PngRenderer;
use crate::record::RequestRecord;

/// `--plot-timeline`: every run's timeline, gaps coloured against `thresholds_ms`.
pub fn write_timeline_page(
    path: &Path,
    runs: &[Vec<RequestRecord>],
    thresholds_ms: [f64; 2],
) -> anyhow::Result<()> {
    let labelled: Vec<(String, &[RequestRecord])> = runs
        .iter()
        .enumerate()
        .map(|(index, records)| {
            let label = match runs.len() {
                1 => "the run".to_string(),
                _ => format!("run {}", index + 1),
            };
            (label, records.as_slice())
        })
        .collect();
    std::fs::write(path, itl_timeline_page(&labelled, thresholds_ms))
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("timeline saved to {}", path.display());
    Ok(())
}

/// `--plot-dataset-stats`: the lengths of every run's requests (in request order, run after
/// run), as `png_path` and the same figure as an SVG beside it.
pub fn write_dataset_stats(png_path: &Path, runs: &[Vec<RequestRecord>]) -> anyhow::Result<()> {
    let mut lengths = Vec::new();
    for records in runs {
        let mut ordered: Vec<&RequestRecord> = records.iter().collect();
        ordered.sort_by_key(|record| record.index);
        lengths.extend(ordered.iter().map(|r| (r.input_tokens, r.output_tokens)));
    }
    let svg = dataset_stats_svg(&lengths);
    let png = PngRenderer::with_system_fonts().render(&svg, 1.0)?;
    if let Some(warning) = &png.warning {
        eprintln!("warning: {warning}");
    }
    let svg_path = png_path.with_extension("svg");
    for (path, bytes) in [
        (png_path, png.bytes.as_slice()),
        (svg_path.as_path(), svg.as_bytes()),
    ] {
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!("dataset statistics saved to {}", png_path.display());
    Ok(())
}
