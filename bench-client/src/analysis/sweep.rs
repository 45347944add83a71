//! Load sweeps: run the same workload at several loads ([`SweepAxis`], one [`SweepPoint`] per
//! load, both in `point`), then reduce the saved results to one summary row per load
//! ([`summary`]), find where throughput saturates ([`knee`]), and search for the highest request
//! rate that still meets the goodput SLOs ([`bisect`]).
//!
//! Everything here is pure and works on saved results (`serde_json::Value` objects with
//! `vllm bench serve`'s keys), so it is tested without a server; the CLI runs `serve` once per
//! load and hands the results in.

pub mod bisect;
pub mod knee;
mod point;
pub mod summary;

pub use bisect::{bisect_max_rate, BisectAttempt, BisectOutcome, BisectStop};
pub use knee::{find_knee, Knee, KneeCriteria, LatencyMetric};
pub use point::{SweepAxis, SweepPoint};
pub use summary::{summarize, SummaryRow, SweepSummary};
