//! `pagoda-bench`: see docs/bench.md.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use pagoda_bench::cli::{execute, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    match execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pagoda-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}
