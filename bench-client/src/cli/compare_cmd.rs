//! `pagoda-bench compare`: saved results side by side against the first, regressions flagged.

use std::path::PathBuf;

use clap::Args;

use crate::analysis::compare::{compare_results, read_result, Comparison};
use crate::cli::sweep_output::write_json;

/// Compare saved results (from `serve --save-result` or `vllm bench serve --save-result`)
/// against the first one, the baseline.
///
/// Exit status: 0 when no metric regressed, 1 when a regression is flagged (and on errors,
/// which print a message starting with `pagoda-bench:`).
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Result files; the first is the baseline, each other one is compared against it.
    #[arg(required = true, num_args = 2.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,
    /// Flag a metric as a regression when it is worse than the baseline by more than this many
    /// percent (throughputs lower, latencies higher).
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub regression_threshold_pct: f64,
    /// Also write the comparison as JSON here.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Raised by [`execute`] when a regression was flagged, so that the process exits with 1.
#[derive(Debug, thiserror::Error)]
#[error("{num_regressions} regression(s) beyond {threshold_pct}% against {baseline}")]
pub struct RegressionFlagged {
    pub num_regressions: usize,
    pub threshold_pct: f64,
    pub baseline: String,
}

/// Prints the comparison (and writes `--output`); returns it.
pub fn compare(args: &CompareArgs) -> anyhow::Result<Comparison> {
    anyhow::ensure!(
        args.regression_threshold_pct.is_finite() && args.regression_threshold_pct >= 0.0,
        "--regression-threshold-pct must be >= 0, got {}",
        args.regression_threshold_pct
    );
    let results = args
        .files
        .iter()
        .map(|path| Ok((path.display().to_string(), read_result(path)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let comparison = compare_results(&results, args.regression_threshold_pct)?;
    print!("{}", comparison.to_text());
    if let Some(output) = &args.output {
        write_json(output, &comparison.to_json())?;
        eprintln!("comparison saved to {}", output.display());
    }
    Ok(comparison)
}

/// `compare`: an error ([`RegressionFlagged`]) when any metric regressed.
pub fn execute(args: CompareArgs) -> anyhow::Result<()> {
    let comparison = compare(&args)?;
    let num_regressions = comparison
        .runs
        .iter()
        .flat_map(|run| &run.deltas)
        .filter(|delta| delta.regression)
        .count();
    if num_regressions > 0 {
        return Err(RegressionFlagged {
            num_regressions,
            threshold_pct: comparison.regression_threshold_pct,
            baseline: comparison.baseline,
        }
        .into());
    }
    Ok(())
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
        args: CompareArgs,
    }

    fn write(dir: &std::path::Path, name: &str, value: serde_json::Value) -> String {
        let path = dir.join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path.display().to_string()
    }

    #[test]
    fn needs_two_files_and_defaults_to_five_percent() {
        assert!(Wrapper::try_parse_from(["x", "a.json"]).is_err());
        let parsed = Wrapper::try_parse_from(["x", "a.json", "b.json"]).unwrap();
        assert_eq!(parsed.args.regression_threshold_pct, 5.0);
        assert_eq!(parsed.args.output, None);
    }

    #[test]
    fn compare_flags_a_regression_and_writes_json() {
        let dir = tempfile::tempdir().unwrap();
        let base = write(
            dir.path(),
            "base.json",
            json!({"output_throughput": 1000.0, "p99_ttft_ms": 100.0}),
        );
        let same = write(
            dir.path(),
            "same.json",
            json!({"output_throughput": 990.0, "p99_ttft_ms": 103.0}),
        );
        let slow = write(
            dir.path(),
            "slow.json",
            json!({"output_throughput": 1000.0, "p99_ttft_ms": 120.0}),
        );
        let output = dir.path().join("out/cmp.json");
        let out = output.display().to_string();
        let ok = Wrapper::parse_from(["x", &base, &same, "--output", &out]).args;
        execute(ok).unwrap();
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(saved["runs"][0]["deltas"][0]["key"], "output_throughput");
        assert_eq!(saved["regression_threshold_pct"], 5.0);

        let bad = Wrapper::parse_from(["x", &base, &same, &slow]).args;
        let error = execute(bad).unwrap_err();
        let flagged = error.downcast_ref::<RegressionFlagged>().unwrap();
        assert_eq!(flagged.num_regressions, 1);
        let lenient = Wrapper::parse_from(["x", &base, &slow, "--regression-threshold-pct", "25"]);
        execute(lenient.args).unwrap();
    }

    #[test]
    fn unreadable_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let base = write(dir.path(), "base.json", json!({"output_throughput": 1.0}));
        let missing = dir.path().join("none.json").display().to_string();
        let args = Wrapper::parse_from(["x", &base, &missing]).args;
        let error = execute(args).unwrap_err();
        assert!(error.downcast_ref::<RegressionFlagged>().is_none());
    }
}
