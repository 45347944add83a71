//! What `pagoda-bench sweep` writes into its output directory:
//!
//! - `results/<axis>-<load>.json`: each load's result, as `serve --save-result` writes it;
//! - `summary.csv`, `summary.json`: one row per load (`summary.json` adds the knee);
//! - `plots/*.svg`, `plots/*.png`: the sweep charts (PNG at twice the SVG's size);
//! - `bisect.json` with `--find-max-rate` (see [`super::sweep_bisect`]).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Value};

use crate::analysis::plot::{sweep_charts, write_charts, PngRenderer};
use crate::analysis::sweep::{Knee, KneeCriteria, SweepSummary};
use crate::cli::serve_cmd::runs_aggregate;
use crate::cli::sweep_loads::point_file_name;

pub const RESULTS_DIR: &str = "results";
pub const PLOTS_DIR: &str = "plots";
pub const SUMMARY_CSV: &str = "summary.csv";
pub const SUMMARY_JSON: &str = "summary.json";
/// PNGs are rasterised at twice the SVG's pixel size (sharp on high-density screens).
pub const PNG_SCALE: f32 = 2.0;

/// Writes `value` as pretty JSON, creating the parent directory.
pub fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Saves one load's result under `results/`; returns its path.
pub fn save_point(
    dir: &Path,
    axis_key: &str,
    load: f64,
    result: &Value,
) -> anyhow::Result<PathBuf> {
    let path = dir.join(RESULTS_DIR).join(point_file_name(axis_key, load));
    write_json(&path, result)?;
    Ok(path)
}

/// What a load's summary row is read from: the mean of its runs when `--num-runs` > 1, else its
/// only run.
pub fn summary_source(result: &Value) -> Value {
    runs_aggregate(result).unwrap_or(result).clone()
}

/// The knee, or `null` when the sweep never saturated, with the criteria it was judged by.
pub fn knee_json(knee: Option<&Knee>, criteria: &KneeCriteria) -> Value {
    json!({
        "knee": knee.map(|k| json!({
            "load": k.load,
            "output_throughput": k.output_throughput,
            "next_load": k.next_load,
            "gain_ratio_pct": k.gain_ratio_pct,
            "latency_rise_pct": k.latency_rise_pct,
        })),
        "knee_criteria": {
            "max_gain_ratio_pct": criteria.max_gain_ratio_pct,
            "min_latency_rise_pct": criteria.min_latency_rise_pct,
            "latency_metric": criteria.latency.key(),
        },
    })
}

/// One line saying where the sweep saturated, or that it did not.
pub fn knee_text(knee: Option<&Knee>, load_key: &str, criteria: &KneeCriteria) -> String {
    let latency = criteria.latency.key();
    match knee {
        Some(k) => format!(
            "Knee: {load_key} = {} ({:.1} output tok/s): going to {} turned only {:.0}% of the \
             extra load into throughput while {latency} rose {:.0}%",
            k.load, k.output_throughput, k.next_load, k.gain_ratio_pct, k.latency_rise_pct
        ),
        None => format!(
            "No knee: throughput kept up with the load (or {latency} did not rise) at every \
             step; sweep higher loads to find saturation"
        ),
    }
}

/// The summary rows as a terminal table.
pub fn summary_table(summary: &SweepSummary) -> String {
    let cell = |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{v:.2}"));
    let mut out = format!(
        "{:>16} {:>10} {:>12} {:>12} {:>12} {:>10} {:>7}\n",
        summary.load_key, "req/s", "output tok/s", "p99 TTFT ms", "p99 ITL ms", "goodput", "errors"
    );
    for row in &summary.rows {
        out.push_str(&format!(
            "{:>16} {:>10} {:>12} {:>12} {:>12} {:>10} {:>7}\n",
            row.load,
            cell(row.request_throughput),
            cell(row.output_throughput),
            cell(row.p99_ttft_ms),
            cell(row.p99_itl_ms),
            cell(row.request_goodput),
            row.num_errors.map_or("-".to_string(), |n| n.to_string()),
        ));
    }
    out
}

/// Writes `summary.csv` and `summary.json` (the rows, plus every key of `extra`), then the
/// plots; prints where they went and any warning of the PNG renderer.
pub fn write_summary(dir: &Path, summary: &SweepSummary, extra: Value) -> anyhow::Result<()> {
    let csv_path = dir.join(SUMMARY_CSV);
    std::fs::write(&csv_path, summary.to_csv())
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let mut json = summary.to_json();
    if let (Some(object), Value::Object(extra)) = (json.as_object_mut(), extra) {
        object.extend(extra);
    }
    write_json(&dir.join(SUMMARY_JSON), &json)?;
    let plots = dir.join(PLOTS_DIR);
    let written = write_charts(
        &plots,
        &sweep_charts(summary),
        &PngRenderer::with_system_fonts(),
        PNG_SCALE,
    )
    .with_context(|| format!("cannot write the plots into {}", plots.display()))?;
    for warning in &written.warnings {
        eprintln!("warning: {warning}");
    }
    eprintln!(
        "sweep summary saved to {} and {}; {} plot files in {}",
        csv_path.display(),
        dir.join(SUMMARY_JSON).display(),
        written.paths.len(),
        plots.display()
    );
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::sweep::{summarize, SweepAxis, SweepPoint};

    #[test]
    fn repeated_runs_are_summarised_by_their_mean() {
        let single = json!({"request_throughput": 3.0});
        assert_eq!(summary_source(&single), single);
        let repeated = json!({
            "request_throughput": 4.0,
            "pagoda": {"runs": {"num_runs": 2, "aggregate": {"request_throughput": 3.5}}},
        });
        assert_eq!(
            summary_source(&repeated),
            json!({"request_throughput": 3.5})
        );
    }

    #[test]
    fn knee_is_described_either_way() {
        let criteria = KneeCriteria::default();
        let knee = Knee {
            load: 8.0,
            output_throughput: 800.0,
            next_load: 16.0,
            gain_ratio_pct: 25.0,
            latency_rise_pct: 300.0,
        };
        let text = knee_text(Some(&knee), "request_rate", &criteria);
        assert!(
            text.starts_with("Knee: request_rate = 8 (800.0 output tok/s)"),
            "{text}"
        );
        assert!(text.contains("only 25%") && text.contains("p99_ttft_ms rose 300%"));
        assert!(knee_text(None, "request_rate", &criteria).starts_with("No knee"));
        let json = knee_json(Some(&knee), &criteria);
        assert_eq!(json["knee"]["next_load"], 16.0);
        assert_eq!(json["knee_criteria"]["latency_metric"], "p99_ttft_ms");
        assert!(knee_json(None, &criteria)["knee"].is_null());
    }

    #[test]
    fn summary_table_shows_missing_cells() {
        let axis = SweepAxis::Concurrency(vec![1]);
        let points = [SweepPoint {
            load: 1.0,
            result: json!({"request_throughput": 2.5, "failed": 0}),
        }];
        let table = summary_table(&summarize(&axis, &points));
        assert!(table.starts_with(&format!("{:>16}", "max_concurrency")));
        assert!(table.contains("2.50") && table.contains(" - "), "{table}");
    }
}
