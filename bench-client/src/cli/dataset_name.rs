//! `--dataset-name`: which dataset builds a `serve` workload.

use clap::ValueEnum;

/// Which dataset builds the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetName {
    Random,
    PrefixRepetition,
    Sharegpt,
    Custom,
    /// Synthetic closed-loop conversations (--num-turns, --turn-input-len, ...).
    Conversation,
    /// A production trace replayed at its own times (--trace-format, --dataset-path).
    Trace,
}
