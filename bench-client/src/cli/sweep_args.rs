//! `pagoda-bench sweep`'s flags ([`SweepArgs`]): the serve flags, the loads to sweep or the
//! `--find-max-rate` bisection, and the output directory.

use std::path::PathBuf;

use anyhow::ensure;
use clap::{ArgGroup, Args};

use crate::analysis::sweep::SweepAxis;
use crate::cli::run_meta::format_date;
use crate::cli::serve_args::ServeArgs;
use crate::cli::sweep_loads::{ConcurrencyList, RateList};

/// Run the serve benchmark at several loads (or search for the highest request rate that meets
/// the SLOs) and write a summary, the knee and plots.
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("loads")
        .required(true)
        .args(["request_rates", "concurrencies", "auto_rates", "find_max_rate"])
))]
pub struct SweepArgs {
    #[command(flatten)]
    pub serve: ServeArgs,

    /// Request rates to sweep, comma-separated requests per second (distinct, > 0), e.g.
    /// 1,2,4,8: one open-loop run at each. Replaces --request-rate; exclusive with
    /// --concurrencies and --find-max-rate.
    #[arg(long, value_name = "RATE,...", conflicts_with = "request_rate")]
    pub request_rates: Option<RateList>,
    /// Concurrency limits to sweep, comma-separated (distinct, >= 1), e.g. 1,8,32: one run at
    /// each with at most that many requests in flight (--request-rate still applies; its
    /// default, inf, makes a closed loop). Replaces --max-concurrency.
    #[arg(long, value_name = "N,...", conflicts_with = "max_concurrency")]
    pub concurrencies: Option<ConcurrencyList>,
    /// A rate sweep that finds its own range (guidellm's `sweep` profile): a closed-loop run one
    /// request at a time and one with every request in flight (under --max-concurrency when
    /// given) measure the lowest and highest useful rates, then this many open-loop rates evenly
    /// spaced between them (both included) are swept as --request-rates would. At least 2. Tip:
    /// --duration SECONDS keeps the serial calibration short.
    #[arg(long, value_name = "N", conflicts_with = "request_rate")]
    pub auto_rates: Option<usize>,
    /// Directory for the summary (CSV, JSON), each load's result, the knee and the plots.
    /// [default: sweep-<YYYYmmdd-HHMMSS> (UTC)]
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// Instead of a list of loads, bisect on the request rate for the highest rate whose run
    /// meets the --goodput SLOs (see --goodput-fraction); needs --goodput. A run in which the
    /// client fell behind its schedule is a failed measurement and stops the search with an
    /// error. Tip: --duration SECONDS gives every probe the same length.
    #[arg(long, requires = "goodput", conflicts_with = "request_rate")]
    pub find_max_rate: bool,
    /// --find-max-rate: a run meets the SLOs when at least this fraction of its requests met
    /// every SLO, i.e. goodput >= fraction × request throughput, failed requests counted as not
    /// good (so a server that drops requests cannot pass). In (0, 1].
    #[arg(long, default_value_t = 0.99, requires = "find_max_rate")]
    pub goodput_fraction: f64,
    /// --find-max-rate: the first rate tried (req/s); halved until a rate meets the SLOs.
    #[arg(long, default_value_t = 1.0, requires = "find_max_rate")]
    pub bisect_low: f64,
    /// --find-max-rate: the upper rate tried next (req/s); doubled while it meets the SLOs.
    #[arg(long, default_value_t = 16.0, requires = "find_max_rate")]
    pub bisect_high: f64,
    /// --find-max-rate: stop when the lowest failing rate is within this fraction above the
    /// highest passing one (relative: 0.05 = 5%).
    #[arg(long, default_value_t = 0.05, requires = "find_max_rate")]
    pub bisect_tolerance: f64,
    /// --find-max-rate: at most this many runs (probes) in all, bracket search included.
    #[arg(long, default_value_t = 10, requires = "find_max_rate")]
    pub bisect_max_runs: usize,
}

impl SweepArgs {
    /// The loads of a list sweep; `None` with --auto-rates (found by running) or
    /// --find-max-rate.
    pub fn axis(&self) -> Option<SweepAxis> {
        match (&self.request_rates, &self.concurrencies) {
            (Some(rates), _) => Some(SweepAxis::RequestRate(rates.0.clone())),
            (None, Some(levels)) => Some(SweepAxis::Concurrency(levels.0.clone())),
            (None, None) => None,
        }
    }

    /// `--output-dir`, else `sweep-<date>` for a sweep starting at `start_unix_s`.
    pub fn output_dir(&self, start_unix_s: f64) -> PathBuf {
        self.output_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("sweep-{}", format_date(start_unix_s))))
    }

    /// Checks what clap cannot: the ranges of the bisection flags and of --auto-rates.
    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(
            self.serve.csv.is_none(),
            "--csv is for serve: a sweep writes summary.csv (one row per load) into \
             --output-dir, and every load's result JSON beside it"
        );
        if let Some(num_rates) = self.auto_rates {
            ensure!(
                num_rates >= 2,
                "--auto-rates needs at least 2 rates, got {num_rates}"
            );
        }
        if !self.find_max_rate {
            return Ok(());
        }
        let fraction = self.goodput_fraction;
        ensure!(
            fraction > 0.0 && fraction <= 1.0,
            "--goodput-fraction must be in (0, 1], got {fraction}"
        );
        let (low, high) = (self.bisect_low, self.bisect_high);
        ensure!(
            low.is_finite() && high.is_finite() && low > 0.0 && high > low,
            "need finite rates 0 < --bisect-low < --bisect-high, got {low} and {high}"
        );
        ensure!(
            self.bisect_tolerance.is_finite() && self.bisect_tolerance > 0.0,
            "--bisect-tolerance must be > 0, got {}",
            self.bisect_tolerance
        );
        ensure!(
            self.bisect_max_runs >= 1,
            "--bisect-max-runs must be at least 1"
        );
        Ok(())
    }
}
