//! PNG output: the chart's SVG rasterised by `resvg` (pure Rust; no C libraries, no network).
//!
//! Text needs a font file, and none is embedded: fonts are loaded from the system once per
//! [`PngRenderer`] (fontdb scans the usual directories, e.g. /usr/share/fonts; Debian's
//! `fonts-dejavu-core` provides DejaVu Sans). Without any font the PNG still has its frame, grid,
//! lines and markers, but no text, and [`RenderedPng::warning`] says so; the SVG is unaffected.

use std::sync::Arc;

use resvg::tiny_skia::{Color, Pixmap, Transform};
use resvg::usvg::{self, fontdb};

use super::error::PlotError;

/// Families tried, in order, as the target of the SVG's generic `sans-serif`.
const PREFERRED_FAMILIES: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "Helvetica",
];

/// What to install when no font is found.
pub const NO_FONT_WARNING: &str =
    "no system font found: the PNG has no text (title, ticks, labels, legend); install a font \
     such as Debian's fonts-dejavu-core, or use the SVG";

/// Rasterises SVG charts with the fonts found when it was made.
#[derive(Debug, Clone)]
pub struct PngRenderer {
    fontdb: Arc<fontdb::Database>,
}

/// A PNG file's bytes, its size, and a warning when something (text) could not be drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedPng {
    pub bytes: Vec<u8>,
    pub width_px: u32,
    pub height_px: u32,
    pub warning: Option<String>,
}

impl PngRenderer {
    /// Loads the system's fonts (a directory scan; make one renderer per run, not per chart).
    pub fn with_system_fonts() -> Self {
        let mut database = fontdb::Database::new();
        database.load_system_fonts();
        Self::with_database(database)
    }

    /// No fonts at all: text is left out of the PNG (for tests, and where that is wanted).
    pub fn without_fonts() -> Self {
        Self::with_database(fontdb::Database::new())
    }

    fn with_database(mut database: fontdb::Database) -> Self {
        let has = |family: &str| {
            database
                .faces()
                .any(|face| face.families.iter().any(|(name, _)| name == family))
        };
        let chosen = PREFERRED_FAMILIES
            .iter()
            .find(|family| has(family))
            .map(|family| family.to_string())
            .or_else(|| {
                database
                    .faces()
                    .find_map(|face| Some(face.families.first()?.0.clone()))
            });
        if let Some(family) = chosen {
            database.set_sans_serif_family(family.clone());
            database.set_serif_family(family);
        }
        Self {
            fontdb: Arc::new(database),
        }
    }

    /// How many font faces text can be drawn with; 0 means the PNG will have no text.
    pub fn num_font_faces(&self) -> usize {
        self.fontdb.len()
    }

    /// Rasterises `svg` at `scale` (1 = the SVG's own pixel size; 2 for sharp images on
    /// high-density screens) on a white background.
    pub fn render(&self, svg: &str, scale: f32) -> Result<RenderedPng, PlotError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(PlotError::Render(format!("scale must be > 0, got {scale}")));
        }
        let options = usvg::Options {
            fontdb: Arc::clone(&self.fontdb),
            ..usvg::Options::default()
        };
        let tree =
            usvg::Tree::from_str(svg, &options).map_err(|e| PlotError::Svg(e.to_string()))?;
        let size = tree.size().to_int_size().scale_by(scale).ok_or_else(|| {
            PlotError::Render(format!("cannot scale {:?} by {scale}", tree.size()))
        })?;
        let mut pixmap = Pixmap::new(size.width(), size.height())
            .ok_or_else(|| PlotError::Render(format!("cannot allocate {size:?} pixels")))?;
        pixmap.fill(Color::WHITE);
        resvg::render(
            &tree,
            Transform::from_scale(scale, scale),
            &mut pixmap.as_mut(),
        );
        let bytes = pixmap
            .encode_png()
            .map_err(|e| PlotError::Render(e.to_string()))?;
        let has_text = svg.contains("<text");
        Ok(RenderedPng {
            bytes,
            width_px: size.width(),
            height_px: size.height(),
            warning: (has_text && self.fontdb.is_empty()).then(|| NO_FONT_WARNING.to_string()),
        })
    }
}
