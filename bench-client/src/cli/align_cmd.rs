//! `pagoda-bench align`: a client's saved result against the server's request timeline.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::analysis::align::{
    align, client_requests, parse_timeline, render_alignment, ClientKind,
};

/// Line a client's result up with the server's own timeline and compare.
#[derive(Debug, Clone, Args)]
pub struct AlignArgs {
    /// The result to check: pagoda-bench's (saved with --save-detailed) or `vllm bench serve
    /// --save-detailed`'s.
    #[arg(value_name = "RESULT.json")]
    pub result: PathBuf,
    /// The server's timeline (`pagoda-server --request-timeline PATH`), of this run only.
    #[arg(long, value_name = "PATH")]
    pub server_timeline: PathBuf,
    /// The request-id prefix the client sent (`x-request-id: PREFIX{i}`). [default: the one the
    /// pagoda-bench result records; required for a vLLM result: its --request-id-prefix]
    #[arg(long, value_name = "PREFIX")]
    pub request_id_prefix: Option<String>,
    /// Also write the comparison as JSON here.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<PathBuf>,
}

pub fn execute(args: AlignArgs) -> anyhow::Result<()> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let result: serde_json::Value = serde_json::from_str(&read(&args.result)?)
        .with_context(|| format!("{} is not JSON", args.result.display()))?;
    let (kind, client) = client_requests(&result, args.request_id_prefix.as_deref())?;
    let server = parse_timeline(&read(&args.server_timeline)?)
        .with_context(|| format!("in {}", args.server_timeline.display()))?;
    let alignment = align(&client, &server)
        .context("no request of the result is in the timeline: check --request-id-prefix")?;
    let client_name = match kind {
        ClientKind::PagodaBench => "pagoda-bench",
        ClientKind::Vllm => "vllm bench serve",
    };
    println!("Client: {client_name} ({})", args.result.display());
    print!("{}", render_alignment(&alignment));
    if let Some(path) = &args.output {
        let text = serde_json::to_string_pretty(&alignment)?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
