//! The alignment's result: each client metric beside the server's truth, the offset, and where
//! the time between them went; as JSON (`--output`) and as a table.

use std::fmt::Write;

use serde::Serialize;

use super::offset::ClockOffset;
use crate::stats::percentile;

/// One metric from both ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlignedMetric {
    /// `ttft`, `tpot`, `itl`, `e2el` (vLLM's names).
    pub name: String,
    pub client: Quantiles,
    /// The same quantity from the server's timeline: from the request's arrival, to the chunk
    /// writes.
    pub server: Quantiles,
    /// (client − server) ÷ server, percent.
    pub p50_difference_pct: Option<f64>,
    pub p99_difference_pct: Option<f64>,
}

impl AlignedMetric {
    pub fn of(name: &str, client_s: Vec<f64>, server_s: Vec<f64>) -> Self {
        let (client, server) = (Quantiles::of(client_s), Quantiles::of(server_s));
        let difference = |c: Option<f64>, s: Option<f64>| match (c, s) {
            (Some(c), Some(s)) if s > 0.0 => Some((c - s) / s * 100.0),
            _ => None,
        };
        Self {
            name: name.to_string(),
            p50_difference_pct: difference(client.p50_s, server.p50_s),
            p99_difference_pct: difference(client.p99_s, server.p99_s),
            client,
            server,
        }
    }
}

/// A client's run lined up with the server's timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alignment {
    pub offset: ClockOffset,
    pub num_client_requests: usize,
    /// Requests found in the server's timeline with text chunks on both sides.
    pub num_matched: usize,
    pub metrics: Vec<AlignedMetric>,
    /// Server received − client sent: the request's way in (client send path, network, the
    /// server's accept and head parsing).
    pub request_transit: Quantiles,
    /// Client read the first text chunk − server wrote it: the way out (network, the client's
    /// read and task wake-up).
    pub first_token_delivery: Quantiles,
    /// Client send − the latest client end before it: how long a freed slot waited for its next
    /// request (a closed loop's dispatch delay).
    pub client_dispatch_gap: Quantiles,
}

fn ms(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{:.3}", v * 1e3))
}

fn pct(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:+.1}%"))
}

/// The alignment as a table.
pub fn render_alignment(alignment: &Alignment) -> String {
    let mut out = String::new();
    let offset = &alignment.offset;
    let _ = writeln!(
        out,
        "Matched {} of {} client requests; clock offset {:.6} s ± {:.3} ms",
        alignment.num_matched,
        alignment.num_client_requests,
        offset.offset_s,
        offset.uncertainty_s() * 1e3
    );
    let _ = writeln!(
        out,
        "{:<6} {:>12} {:>12} {:>8}   {:>12} {:>12} {:>8}",
        "metric", "client p50", "server p50", "diff", "client p99", "server p99", "diff"
    );
    for m in &alignment.metrics {
        let _ = writeln!(
            out,
            "{:<6} {:>12} {:>12} {:>8}   {:>12} {:>12} {:>8}",
            m.name,
            ms(m.client.p50_s),
            ms(m.server.p50_s),
            pct(m.p50_difference_pct),
            ms(m.client.p99_s),
            ms(m.server.p99_s),
            pct(m.p99_difference_pct)
        );
    }
    let _ = writeln!(
        out,
        "(ms; server = from the request's arrival to its chunk writes)"
    );
    for (label, q) in [
        (
            "Request transit (received − sent)",
            &alignment.request_transit,
        ),
        (
            "First-token delivery (read − written)",
            &alignment.first_token_delivery,
        ),
        (
            "Client dispatch gap (send − previous end)",
            &alignment.client_dispatch_gap,
        ),
    ] {
        let _ = writeln!(
            out,
            "{label:<42} p50 {} ms, p99 {} ms ({} samples)",
            ms(q.p50_s),
            ms(q.p99_s),
            q.num_samples
        );
    }
    out
}

/// p50, p99 and the number of samples, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Quantiles {
    pub num_samples: usize,
    pub p50_s: Option<f64>,
    pub p99_s: Option<f64>,
}

impl Quantiles {
    pub fn of(mut samples_s: Vec<f64>) -> Self {
        samples_s.sort_by(f64::total_cmp);
        Self {
            num_samples: samples_s.len(),
            p50_s: percentile(&samples_s, 50.0),
            p99_s: percentile(&samples_s, 99.0),
        }
    }
}
