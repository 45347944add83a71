//! The `pagoda-bench` command line: one subcommand per task.

pub mod align_cmd;
pub mod backend;
pub mod compare_cmd;
pub mod conversation_args;
pub mod dataset_name;
pub mod exit_status;
pub mod lora_args;
pub mod merge_cmd;
pub mod plan_cmd;
pub mod report_cmd;
pub mod result_file;
pub mod run_meta;
pub mod sampling_args;
pub mod serve;
pub mod serve_args;
pub mod serve_cmd;
pub mod serve_plots;
pub mod serve_workload;
pub mod structured_output_args;
pub mod sweep_args;
pub mod sweep_auto;
pub mod sweep_bisect;
pub mod sweep_cmd;
pub mod sweep_loads;
pub mod sweep_output;
pub mod trace_args;
pub mod trace_replay;

use clap::{Parser, Subcommand};

#[cfg(feature = "offline")]
use crate::offline::{latency_cmd, throughput_cmd};

/// Pagoda's benchmark client: serving benchmarks against any OpenAI-compatible server, sweeps,
/// comparisons, offline latency/throughput, capacity planning.
#[derive(Debug, Parser)]
#[command(name = "pagoda-bench", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark a running server (like `vllm bench serve`).
    Serve(Box<serve_args::ServeArgs>),
    /// Combine the detailed results of several client processes into exact global statistics.
    Merge(merge_cmd::MergeArgs),
    /// Benchmark a running server at several loads (--request-rates or --concurrencies), or
    /// search for the highest request rate that meets the SLOs (--find-max-rate); writes a
    /// summary, the knee and plots.
    Sweep(Box<sweep_args::SweepArgs>),
    /// Compare saved results against the first (exit status 1 when a regression is flagged).
    Compare(compare_cmd::CompareArgs),
    /// Write saved results as one self-contained HTML report (charts inline, nothing fetched).
    Report(report_cmd::ReportArgs),
    #[cfg(feature = "offline")]
    /// Time batches end to end with the engine in this process (like `vllm bench latency`).
    Latency(latency_cmd::LatencyCmdArgs),
    #[cfg(feature = "offline")]
    /// Tokens per second of many requests at once with the engine in this process (like
    /// `vllm bench throughput`).
    Throughput(throughput_cmd::ThroughputCmdArgs),
    /// Line a saved result up with the server's own request timeline (`pagoda-server
    /// --request-timeline`) and say how far each client metric is from it, and why.
    Align(align_cmd::AlignArgs),
    /// Capacity planning: `plan capacity` (GPUs for a daily volume) or `plan roofline` (the
    /// memory-bandwidth bound of decoding).
    Plan(plan_cmd::PlanArgs),
}

/// Runs the parsed command.
pub fn execute(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => runtime()?.block_on(serve_cmd::execute(*args)),
        Command::Merge(args) => merge_cmd::execute(args),
        Command::Sweep(args) => runtime()?.block_on(sweep_cmd::execute(*args)),
        Command::Compare(args) => compare_cmd::execute(args),
        Command::Report(args) => report_cmd::execute(args),
        #[cfg(feature = "offline")]
        Command::Latency(args) => runtime()?.block_on(latency_cmd::execute(args)).map(drop),
        #[cfg(feature = "offline")]
        Command::Throughput(args) => runtime()?.block_on(throughput_cmd::execute(args)).map(drop),
        Command::Plan(args) => plan_cmd::execute(args).map(drop),
        Command::Align(args) => align_cmd::execute(args),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("pagoda-bench")
        .build()?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_parses() {
        let offline = [
            "pagoda-bench latency --batch-size 1",
            "pagoda-bench throughput --num-prompts 3",
        ];
        for line in [
            "pagoda-bench sweep --request-rates 1,2",
            "pagoda-bench compare a.json b.json",
            "pagoda-bench report a.json -o r.html",
            "pagoda-bench plan roofline --params 8B --bandwidth-gbps 3350",
        ] {
            let parsed = Cli::try_parse_from(line.split(' '));
            assert!(parsed.is_ok(), "{line}: {}", parsed.unwrap_err());
        }
        // Subcommands only in a build with the `offline` feature (the default).
        for line in offline {
            let parsed = Cli::try_parse_from(line.split(' '));
            assert_eq!(parsed.is_ok(), cfg!(feature = "offline"), "{line}");
        }
    }
}
