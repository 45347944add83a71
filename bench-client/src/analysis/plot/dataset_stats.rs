//! `serve --plot-dataset-stats` (vLLM's flag): the lengths of a run's requests as one figure,
//! `<result>.dataset_stats.png` (and `.svg`) beside the result file — histograms of the prompt,
//! output and total tokens (30 bins each), and every request's prompt and total tokens in
//! request order (the gap between the two lines is its output).

use super::chart::{Chart, Series, HEIGHT_PX, WIDTH_PX};
use super::svg::render_inline_svg;

/// Bins of each histogram (vLLM's).
pub const NUM_BINS: usize = 30;

/// One request's `(prompt tokens, output tokens)`, in request order.
pub type RequestLengths = (usize, usize);

/// The outline of a histogram of `values` in `num_bins` equal bins from the smallest value to
/// the largest: `(bin edge, count)` points drawn as a staircase, starting and ending at 0.
pub fn histogram_outline(values: &[f64], num_bins: usize) -> Vec<(f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (Some(&low), Some(&high)) = (
        finite.iter().min_by(|a, b| a.total_cmp(b)),
        finite.iter().max_by(|a, b| a.total_cmp(b)),
    ) else {
        return Vec::new();
    };
    let num_bins = num_bins.max(1);
    // All equal: one bin one unit wide around them.
    let (low, width) = match high > low {
        true => (low, (high - low) / num_bins as f64),
        false => (low - 0.5, 1.0 / num_bins as f64),
    };
    let mut counts = vec![0usize; num_bins];
    for value in finite {
        let bin = ((value - low) / width) as usize;
        counts[bin.min(num_bins - 1)] += 1;
    }
    let edge = |i: usize| low + width * i as f64;
    let mut points = vec![(edge(0), 0.0)];
    for (i, &count) in counts.iter().enumerate() {
        points.push((edge(i), count as f64));
        points.push((edge(i + 1), count as f64));
    }
    points.push((edge(num_bins), 0.0));
    points
}

fn histogram_chart(title: &str, x_label: &str, label: &str, values: &[f64]) -> Chart {
    Chart {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: "Requests".to_string(),
        series: vec![Series {
            label: label.to_string(),
            points: histogram_outline(values, NUM_BINS),
        }],
    }
}

/// The four charts, in reading order.
pub fn dataset_stats_charts(lengths: &[RequestLengths]) -> [Chart; 4] {
    let prompts: Vec<f64> = lengths.iter().map(|&(p, _)| p as f64).collect();
    let outputs: Vec<f64> = lengths.iter().map(|&(_, o)| o as f64).collect();
    let totals: Vec<f64> = lengths.iter().map(|&(p, o)| (p + o) as f64).collect();
    let per_request = |values: &[f64]| -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as f64, v))
            .collect()
    };
    [
        histogram_chart("Prompt tokens", "Prompt tokens", "prompt", &prompts),
        histogram_chart("Output tokens", "Output tokens", "output", &outputs),
        histogram_chart(
            "Total tokens (prompt + output)",
            "Total tokens",
            "total",
            &totals,
        ),
        Chart {
            title: "Tokens per request".to_string(),
            x_label: "Request".to_string(),
            y_label: "Tokens".to_string(),
            series: vec![
                Series {
                    label: "prompt".to_string(),
                    points: per_request(&prompts),
                },
                Series {
                    label: "prompt + output".to_string(),
                    points: per_request(&totals),
                },
            ],
        },
    ]
}

/// The four charts as one SVG document, two by two.
pub fn dataset_stats_svg(lengths: &[RequestLengths]) -> String {
    let (width, height) = (WIDTH_PX * 2, HEIGHT_PX * 2);
    let mut svg = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">\n"
    );
    for (index, chart) in dataset_stats_charts(lengths).iter().enumerate() {
        let (x, y) = (
            (index % 2) as u32 * WIDTH_PX,
            (index / 2) as u32 * HEIGHT_PX,
        );
        let inner = render_inline_svg(chart, false);
        let placed = inner.replacen("<svg", &format!("<svg x=\"{x}\" y=\"{y}\""), 1);
        svg.push_str(&placed);
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::plot::PngRenderer;

    /// The counts of a staircase outline, one per bin.
    fn counts(outline: &[(f64, f64)]) -> Vec<f64> {
        outline[1..outline.len() - 1]
            .chunks(2)
            .map(|pair| pair[0].1)
            .collect()
    }

    #[test]
    fn every_value_lands_in_one_bin() {
        let values: Vec<f64> = (0..100).map(f64::from).collect();
        let outline = histogram_outline(&values, 10);
        assert_eq!(counts(&outline), vec![10.0; 10]);
        assert_eq!(outline.first(), Some(&(0.0, 0.0)));
        assert_eq!(outline.last(), Some(&(99.0, 0.0)));
        // The largest value is in the last bin, not past it; equal values make one bin.
        let equal = counts(&histogram_outline(&[7.0; 5], 4));
        assert_eq!(equal.iter().sum::<f64>(), 5.0);
        assert!(histogram_outline(&[f64::NAN], 4).is_empty());
    }

    #[test]
    fn the_figure_holds_four_charts_and_renders() {
        let lengths: Vec<RequestLengths> = (0..40).map(|i| (100 + i, 20 + i % 7)).collect();
        let charts = dataset_stats_charts(&lengths);
        for chart in &charts[..3] {
            let total: f64 = counts(&chart.series[0].points).iter().sum();
            assert_eq!(total, 40.0, "{}", chart.title);
        }
        let last = &charts[3].series[1].points;
        assert_eq!(last[5], (5.0, (105 + 25) as f64));
        let svg = dataset_stats_svg(&lengths);
        assert_eq!(svg.matches("<svg").count(), 5);
        let png = PngRenderer::without_fonts()
            .render(&svg, 1.0)
            .expect("renders");
        assert_eq!((png.width_px, png.height_px), (WIDTH_PX * 2, HEIGHT_PX * 2));
    }
}
