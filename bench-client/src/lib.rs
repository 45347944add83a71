//! `pagoda-bench`: the serving benchmark client. It sends a workload to any OpenAI-compatible
//! server on an exact schedule, records every request ([`record::RequestRecord`]), and turns the
//! records into the statistics users size GPUs with.
//!
//! The core — datasets and workloads, the schedule, the client, the runner, records,
//! statistics, the terminal and JSON report — is the top level; [`analysis`] builds on it
//! (server metrics, sweeps, compare, capacity plans, alignment, the HTML report and charts) and
//! the core never reads it (`tests/tests/module_graph` checks); [`cli`] puts them together;
//! [`offline`] (feature `offline`) is all that needs the engine.

pub mod analysis;
pub mod cli;
pub mod client;
pub mod dataset;
pub mod lora;
#[cfg(feature = "offline")]
pub mod offline;
pub mod progress;
pub mod record;
pub mod record_csv;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod stats;
pub mod workload;
