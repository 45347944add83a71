#![allow(clippy::unwrap_used)]

use resvg::tiny_skia::Pixmap;
use resvg::usvg;

use super::svg::Frame;
use super::*;
use crate::analysis::sweep::{summarize, SweepAxis, SweepPoint, SweepSummary};

const PNG_SIGNATURE: [u8; 8] = [137, 80, 78, 71, 13, 10, 26, 10];

fn chart(series: Vec<Series>) -> Chart {
    Chart {
        title: "Test chart".into(),
        x_label: "Load (req/s)".into(),
        y_label: "Latency (ms)".into(),
        series,
    }
}

fn diagonal() -> Chart {
    chart(vec![Series {
        label: "p99".into(),
        points: vec![(0.0, 0.0), (10.0, 10.0)],
    }])
}

/// Parses with usvg's strict XML parser: fails on any malformed markup.
fn assert_well_formed(svg: &str) {
    usvg::Tree::from_str(svg, &usvg::Options::default()).unwrap();
    for tag in ["svg", "text"] {
        assert_eq!(
            svg.matches(&format!("<{tag}")).count(),
            svg.matches(&format!("</{tag}>")).count(),
            "{tag}"
        );
    }
}

fn is_white(pixmap: &Pixmap, x: f64, y: f64) -> bool {
    let p = pixmap.pixel(x.round() as u32, y.round() as u32).unwrap();
    (p.red(), p.green(), p.blue()) == (255, 255, 255)
}

#[test]
fn svg_is_well_formed_with_the_expected_elements() {
    let chart = chart(vec![
        Series {
            label: "p50 <TTFT> & co".into(),
            points: vec![(1.0, 10.0), (2.0, 12.0), (4.0, 30.0)],
        },
        Series {
            label: "p99".into(),
            points: vec![(1.0, 20.0), (2.0, f64::NAN), (4.0, 90.0)],
        },
    ]);
    let svg = render_svg(&chart);
    assert_well_formed(&svg);
    assert!(svg.contains(r#"width="800" height="500""#));
    assert!(
        svg.contains("p50 &lt;TTFT&gt; &amp; co"),
        "labels are escaped"
    );
    assert_eq!(svg.matches("<polyline").count(), 2);
    // 3 + 2 finite points, plus one legend marker per series.
    assert_eq!(svg.matches("<circle").count(), 7);
    let frame = Frame::of(&chart);
    let num_ticks = frame.x_axis.ticks().len() + frame.y_axis.ticks().len();
    // Title, tick labels, two axis labels, two legend labels.
    assert_eq!(svg.matches("<text").count(), 1 + num_ticks + 2 + 2);
    for text in ["Test chart", "Load (req/s)", "Latency (ms)", ">0<", ">100<"] {
        assert!(svg.contains(text), "{text}");
    }
}

#[test]
fn an_empty_chart_says_no_data() {
    let svg = render_svg(&chart(Vec::new()));
    assert_well_formed(&svg);
    assert!(svg.contains("no data"));
    assert_eq!(svg.matches("<polyline").count(), 0);
}

#[test]
fn png_has_signature_size_and_the_line() {
    let chart = diagonal();
    let png = PngRenderer::without_fonts()
        .render(&render_svg(&chart), 1.0)
        .unwrap();
    assert_eq!(png.bytes[..8], PNG_SIGNATURE);
    let ihdr_width = u32::from_be_bytes(png.bytes[16..20].try_into().unwrap());
    let ihdr_height = u32::from_be_bytes(png.bytes[20..24].try_into().unwrap());
    assert_eq!(
        (ihdr_width, ihdr_height, png.width_px, png.height_px),
        (800, 500, 800, 500)
    );
    assert_eq!(png.warning.as_deref(), Some(NO_FONT_WARNING));

    let pixmap = Pixmap::decode_png(&png.bytes).unwrap();
    let frame = Frame::of(&chart);
    let (x, y) = frame.to_px(5.0, 5.0);
    let on_line = pixmap.pixel(x.round() as u32, y.round() as u32).unwrap();
    // The first series colour, #0072B2.
    assert!(on_line.blue() > 150 && on_line.red() < 60, "{on_line:?}");
    let (x_off, y_off) = frame.to_px(9.0, 1.0);
    assert!(
        is_white(&pixmap, x_off, y_off),
        "away from the line and the grid"
    );
}

#[test]
fn png_scale_multiplies_the_size() {
    let png = PngRenderer::without_fonts()
        .render(&render_svg(&diagonal()), 2.0)
        .unwrap();
    assert_eq!((png.width_px, png.height_px), (1600, 1000));
    let pixmap = Pixmap::decode_png(&png.bytes).unwrap();
    assert_eq!((pixmap.width(), pixmap.height()), (1600, 1000));
    assert!(PngRenderer::without_fonts().render("<svg", 1.0).is_err());
    assert!(PngRenderer::without_fonts()
        .render(&render_svg(&diagonal()), 0.0)
        .is_err());
}

#[test]
fn system_fonts_draw_the_title_or_warn() {
    let svg = render_svg(&diagonal());
    let renderer = PngRenderer::with_system_fonts();
    let png = renderer.render(&svg, 1.0).unwrap();
    let pixmap = Pixmap::decode_png(&png.bytes).unwrap();
    // The title's band, above the plot area.
    let num_dark = (300..500)
        .flat_map(|x| (15..35).map(move |y| (x, y)))
        .filter(|&(x, y)| pixmap.pixel(x, y).unwrap().red() < 128)
        .count();
    if renderer.num_font_faces() == 0 {
        assert_eq!(png.warning.as_deref(), Some(NO_FONT_WARNING));
        assert_eq!(num_dark, 0);
    } else {
        assert_eq!(png.warning, None);
        assert!(num_dark > 50, "title drawn: {num_dark} dark pixels");
    }
}

fn summary() -> SweepSummary {
    let points: Vec<SweepPoint> = [1.0, 2.0, 4.0]
        .into_iter()
        .map(|rate| SweepPoint {
            load: rate,
            result: serde_json::json!({
                "output_throughput": 100.0 * rate, "median_ttft_ms": 20.0 * rate, "p99_ttft_ms": 40.0 * rate,
                "median_itl_ms": 8.0, "p99_itl_ms": 15.0, "p99_e2el_ms": 900.0 + rate,
            }),
        })
        .collect();
    summarize(&SweepAxis::RequestRate(vec![1.0, 2.0, 4.0]), &points)
}

#[test]
fn sweep_charts_plot_the_summary() {
    let charts = sweep_charts(&summary());
    let names: Vec<&str> = charts.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        vec!["throughput_vs_p99_latency", "ttft_vs_load", "itl_vs_load"]
    );
    let ttft = &charts[1].chart;
    assert_eq!(ttft.x_label, "Request rate (req/s)");
    assert_eq!(
        ttft.series[1].points,
        vec![(1.0, 40.0), (2.0, 80.0), (4.0, 160.0)]
    );
    assert_eq!(charts[0].chart.series[0].points[2], (400.0, 160.0));
    for named in &charts {
        assert_well_formed(&render_svg(&named.chart));
    }
}

#[test]
fn write_charts_writes_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plots");
    let written = write_charts(
        &out,
        &sweep_charts(&summary()),
        &PngRenderer::without_fonts(),
        1.0,
    )
    .unwrap();
    assert_eq!(written.paths.len(), 6);
    assert_eq!(written.warnings, vec![NO_FONT_WARNING.to_string()]);
    let png = std::fs::read(out.join("ttft_vs_load.png")).unwrap();
    assert_eq!(png[..8], PNG_SIGNATURE);
    let svg = std::fs::read_to_string(out.join("itl_vs_load.svg")).unwrap();
    assert_well_formed(&svg);
}
