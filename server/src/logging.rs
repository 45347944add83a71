//! Logs on stderr, as text or one JSON object per line; `--log-level` sets the level (default
//! info), `RUST_LOG` when set.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::args::{LogFormat, LogLevel};

pub fn init_logging(format: LogFormat, level: LogLevel) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level.directive()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
    if let Err(error) = result {
        eprintln!("logging was already set up: {error}");
    }
}
