//! What the load makes certain: the order of magnitude of some panels for each kind of server,
//! and which servers each alert must fire for.

use super::scenario::Role;

/// A panel query whose value, for a server of `role`, must lie within [min, max] (the median of
/// its samples while the load ran).
pub struct PanelExpectation {
    pub panel: &'static str,
    pub ref_id: &'static str,
    pub role: Role,
    pub min: f64,
    pub max: f64,
}

const fn expect(
    panel: &'static str,
    ref_id: &'static str,
    role: Role,
    min: f64,
    max: f64,
) -> PanelExpectation {
    PanelExpectation {
        panel,
        ref_id,
        role,
        min,
        max,
    }
}

/// Healthy: 4 req/s, 16 generated tokens each, 50 ms TTFT, 10 ms TPOT, a 1 GiB KV cache.
/// Overloaded: 1.2 s TTFT and 150 ms TPOT (both SLOs missed), 45 KV blocks for 16 sequences.
/// Faulty: every request fails with a 500.
pub const PANEL_EXPECTATIONS: &[PanelExpectation] = &[
    expect("Finished requests/s", "A", Role::Healthy, 2.0, 8.0),
    expect(
        "Prompt and generated tokens/s",
        "B",
        Role::Healthy,
        30.0,
        130.0,
    ),
    expect("TTFT p99", "A", Role::Healthy, 0.04, 0.5),
    expect("TPOT p99", "A", Role::Healthy, 0.01, 0.05),
    expect("Time to first token (TTFT)", "A", Role::Healthy, 0.04, 0.1),
    expect("TTFT SLO attainment", "A", Role::Healthy, 0.99, 1.0),
    expect("TPOT SLO attainment", "A", Role::Healthy, 0.99, 1.0),
    expect("HTTP 5xx ratio", "A", Role::Healthy, 0.0, 0.0),
    expect("KV-cache usage", "A", Role::Healthy, 0.0, 0.1),
    expect("Preemptions/s", "A", Role::Healthy, 0.0, 0.0),
    expect("TTFT SLO attainment", "A", Role::Overloaded, 0.0, 0.2),
    expect("TPOT SLO attainment", "A", Role::Overloaded, 0.0, 0.2),
    expect(
        "Time to first token (TTFT)",
        "A",
        Role::Overloaded,
        1.0,
        60.0,
    ),
    expect("KV-cache usage", "A", Role::Overloaded, 0.85, 1.0),
    expect("Preemptions/s", "A", Role::Overloaded, 0.1, 10.0),
    expect("HTTP 5xx ratio", "A", Role::Faulty, 0.99, 1.0),
    expect("Error ratios", "C", Role::Faulty, 0.99, 1.0),
    expect("Error ratios", "C", Role::Healthy, 0.0, 0.0),
];

/// Whom an alert must fire for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertSubject {
    Role(Role),
    DownTarget,
}

pub fn alert_subject(alert: &str) -> AlertSubject {
    match alert {
        "PagodaHighErrorRate" | "PagodaRequestErrors" => AlertSubject::Role(Role::Faulty),
        "PagodaTargetDown" => AlertSubject::DownTarget,
        _ => AlertSubject::Role(Role::Overloaded),
    }
}
