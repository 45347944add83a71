//! `pagoda-server`: the OpenAI-compatible HTTP server. See docs/server.md.

use std::process::ExitCode;

use clap::Parser;
use pagoda_server::app::{build_state, serve};
use pagoda_server::args::ServerArgs;
use pagoda_server::logging::init_logging;

fn main() -> ExitCode {
    pagoda_engine::cpu_threads::use_one_cpu_pool();
    let args = ServerArgs::parse();
    init_logging(args.log_format, args.log_level);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("pagoda-server: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &ServerArgs) -> anyhow::Result<()> {
    let state = build_state(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("pagoda-http")
        .build()?;
    runtime.block_on(serve(args, state))
}
