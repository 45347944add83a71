//! How the server reads tool calls from the output: vLLM's `--tool-call-parser` and
//! `--enable-auto-tool-choice`, checked together at start.

use anyhow::bail;
use pagoda_text::tool_calls::ToolCallFormat;

use crate::args::ServerArgs;

/// How the server reads tool calls (its `--tool-call-parser` and `--enable-auto-tool-choice`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolCallConfig {
    pub parser: Option<ToolCallFormat>,
    pub enable_auto_tool_choice: bool,
}

/// `--tool-call-parser` and `--enable-auto-tool-choice`, checked as vLLM checks them.
pub fn tool_call_config(args: &ServerArgs) -> anyhow::Result<ToolCallConfig> {
    let parser = match &args.tool_call_parser {
        None => None,
        Some(name) => Some(name.parse::<ToolCallFormat>().map_err(|_| {
            anyhow::anyhow!(
                "unknown --tool-call-parser {name:?}: expected one of {}",
                ToolCallFormat::CLI_NAMES.join(", ")
            )
        })?),
    };
    if args.enable_auto_tool_choice && parser.is_none() {
        bail!("--enable-auto-tool-choice needs --tool-call-parser");
    }
    Ok(ToolCallConfig {
        parser,
        enable_auto_tool_choice: args.enable_auto_tool_choice,
    })
}
