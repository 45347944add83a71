//! The chart model: [`Chart`]s of labelled [`Series`], and their size.

/// Every chart's size in SVG pixels (the PNG's at scale 1).
pub const WIDTH_PX: u32 = 800;
pub const HEIGHT_PX: u32 = 500;

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
