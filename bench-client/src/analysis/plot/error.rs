//! [`PlotError`]: what can go wrong writing a chart.

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
