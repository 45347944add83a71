//! `pagoda-bench`: the serving benchmark client. It sends a workload to any OpenAI-compatible
//! server on an exact schedule, records every request ([`record::RequestRecord`]), and turns the
//! records into the statistics users size GPUs with.

pub mod align;
pub mod cli;
pub mod client;
pub mod compare;
pub mod dataset;
pub mod html;
pub mod lora;
#[cfg(feature = "offline")]
pub mod offline;
pub mod plan;
pub mod plot;
pub mod progress;
pub mod record;
pub mod record_csv;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod scrape;
pub mod stats;
pub mod sweep;
pub mod workload;
