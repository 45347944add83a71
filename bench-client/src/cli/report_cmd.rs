//! `pagoda-bench report`: saved results (and sweep summaries) as one self-contained HTML page.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::analysis::html::{parse_input, read_input, render_report, ReportInput, ReportOptions};

/// Write an HTML report of saved results: summary, errors by kind, latency distributions,
/// throughput and concurrency over time, per-request timeline, the server's scraped series, and
/// for several results the comparison against the first and the sweep curves with the knee.
/// One file with everything inline: it fetches nothing.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Result files (`serve --save-result`; with --save-detailed for the per-request charts),
    /// or a sweep's summary.json. The first result is the comparison's baseline.
    #[arg(required = true, num_args = 1.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,
    /// Where to write the report.
    #[arg(short, long, default_value = "report.html", value_name = "PATH")]
    pub output: PathBuf,
    /// The page's title.
    #[arg(long, default_value = "pagoda-bench report")]
    pub title: String,
    /// The comparison flags a metric worse than the baseline by more than this many percent.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub regression_threshold_pct: f64,
}

/// Renders `inputs` and writes the page to `path` (creating its directory).
pub fn write_report(
    path: &Path,
    inputs: &[ReportInput],
    options: &ReportOptions,
) -> anyhow::Result<()> {
    let html = render_report(inputs, options)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("HTML report written to {}", path.display());
    Ok(())
}

/// `serve --html`: the report of the runs just made (their results with the records in
/// memory), one per run, named `label` (`run N of M` for several runs).
pub fn write_run_report(
    path: &Path,
    results: &[serde_json::Value],
    label: Option<&str>,
) -> anyhow::Result<()> {
    let name = label.unwrap_or("this run");
    let inputs = results
        .iter()
        .enumerate()
        .map(|(index, result)| {
            let label = if results.len() > 1 {
                format!("{name}: run {} of {}", index + 1, results.len())
            } else {
                name.to_string()
            };
            parse_input(&label, result.clone())
        })
        .collect::<Result<Vec<_>, _>>()?;
    write_report(path, &inputs, &ReportOptions::default())
}

/// `report`: reads every file, writes the page.
pub fn execute(args: ReportArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.regression_threshold_pct.is_finite() && args.regression_threshold_pct >= 0.0,
        "--regression-threshold-pct must be >= 0, got {}",
        args.regression_threshold_pct
    );
    let inputs = args
        .files
        .iter()
        .map(|path| read_input(path))
        .collect::<Result<Vec<_>, _>>()?;
    let options = ReportOptions {
        title: args.title,
        regression_threshold_pct: args.regression_threshold_pct,
    };
    write_report(&args.output, &inputs, &options)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: ReportArgs,
    }

    #[test]
    fn defaults_and_required_files() {
        assert!(Wrapper::try_parse_from(["x"]).is_err());
        let parsed = Wrapper::try_parse_from(["x", "a.json"]).unwrap().args;
        assert_eq!(parsed.output, PathBuf::from("report.html"));
        let parsed = Wrapper::try_parse_from(["x", "a.json", "b.json", "-o", "r/x.html"]).unwrap();
        assert_eq!(parsed.args.files.len(), 2);
        assert_eq!(parsed.args.output, PathBuf::from("r/x.html"));
    }

    #[test]
    fn writes_a_page_and_rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("run.json");
        std::fs::write(&result, json!({"output_throughput": 10.0}).to_string()).unwrap();
        let output = dir.path().join("out/report.html");
        let args = Wrapper::parse_from([
            "x",
            result.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ]);
        execute(args.args).unwrap();
        let html = std::fs::read_to_string(&output).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("run.json"));

        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{not json").unwrap();
        let args = Wrapper::parse_from(["x", broken.to_str().unwrap()]);
        let error = execute(args.args).unwrap_err().to_string();
        assert!(error.contains("broken.json is not JSON"), "{error}");
        let missing = dir.path().join("missing.json");
        let args = Wrapper::parse_from(["x", missing.to_str().unwrap()]);
        assert!(execute(args.args)
            .unwrap_err()
            .to_string()
            .contains("cannot read"));
    }
}
