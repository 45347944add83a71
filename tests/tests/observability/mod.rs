//! Shared parts of the observability test (`tests/tests/observability_prometheus.rs`).

pub mod dashboards;
pub mod expectations;
pub mod rules;
pub mod scenario;
