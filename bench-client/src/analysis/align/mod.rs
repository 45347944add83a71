//! `pagoda-bench align`: a client's per-request timings lined up with the server's own timeline
//! (`pagoda-server --request-timeline`), request by request (matched by `x-request-id`), on one
//! clock (the offset estimated from causality, [`offset`]). The comparison says how far each
//! client metric is from the server's truth, and where the difference comes from: the request's
//! way in (send → received), the first token's way out (written → read), and for a closed loop
//! how soon the client sends the next request after one ends (docs/bench.md § Ground truth).

pub mod client_view;
pub mod offset;
mod report;
pub mod server_timeline;

use std::collections::HashMap;

pub use client_view::{client_requests, ClientKind, ClientRequest};
pub use offset::{estimate_offset, CausalPairs, ClockOffset, OffsetError};
pub use report::Quantiles;
pub use report::{render_alignment, AlignedMetric, Alignment};
pub use server_timeline::{parse_timeline, ServerRequest};

/// One request seen from both ends, the client's times moved onto the server's clock.
#[derive(Debug, Clone, PartialEq)]
struct Matched<'a> {
    client: &'a ClientRequest,
    server: &'a ServerRequest,
}

/// Lines `client` up with `server` (by request id) and compares them. Requests the server has
/// no line for, or with no text chunk on either side, are left out (and counted).
pub fn align(
    client: &[ClientRequest],
    server: &HashMap<String, ServerRequest>,
) -> Result<Alignment, OffsetError> {
    let matched: Vec<Matched> = client
        .iter()
        .filter_map(|c| {
            let s = server.get(&c.request_id)?;
            let usable = !c.chunk_times_s.is_empty() && !s.delta_writes_unix_s.is_empty();
            usable.then_some(Matched {
                client: c,
                server: s,
            })
        })
        .collect();
    let pairs: Vec<CausalPairs> = matched.iter().map(causal_pairs).collect();
    let offset = estimate_offset(&pairs)?;
    let theta = offset.offset_s;
    let metric = |name: &str,
                  client_s: &dyn Fn(&Matched) -> Vec<f64>,
                  server_s: &dyn Fn(&Matched) -> Vec<f64>| {
        AlignedMetric::of(
            name,
            matched.iter().flat_map(client_s).collect(),
            matched.iter().flat_map(server_s).collect(),
        )
    };
    let metrics = vec![
        metric(
            "ttft",
            &|m| vec![m.client.chunk_times_s[0] - m.client.send_s],
            &|m| vec![m.server.delta_writes_unix_s[0] - m.server.received_unix_s],
        ),
        metric(
            "tpot",
            &|m| {
                tpot(
                    m.client.chunk_times_s[0],
                    m.client.end_s,
                    m.client.output_tokens,
                )
            },
            &|m| {
                let first_write = m.server.delta_writes_unix_s[0];
                tpot(first_write, server_end(m), m.client.output_tokens)
            },
        ),
        metric("itl", &|m| gaps(&m.client.chunk_times_s), &|m| {
            gaps(&m.server.delta_writes_unix_s)
        }),
        metric("e2el", &|m| vec![m.client.end_s - m.client.send_s], &|m| {
            vec![server_end(m) - m.server.received_unix_s]
        }),
    ];
    let request_transit_s = matched
        .iter()
        .map(|m| m.server.received_unix_s - (m.client.send_s + theta))
        .collect();
    let first_token_delivery_s = matched
        .iter()
        .map(|m| m.client.chunk_times_s[0] + theta - m.server.delta_writes_unix_s[0])
        .collect();
    Ok(Alignment {
        offset,
        num_client_requests: client.len(),
        num_matched: matched.len(),
        metrics,
        request_transit: Quantiles::of(request_transit_s),
        first_token_delivery: Quantiles::of(first_token_delivery_s),
        client_dispatch_gap: Quantiles::of(dispatch_gaps(client)),
    })
}

/// The server's end of the span the client's `end_s` closes: `[DONE]` when the client's end
/// is after it, else the last text chunk.
fn server_end(m: &Matched) -> f64 {
    let last_write = m.server.delta_writes_unix_s[m.server.delta_writes_unix_s.len() - 1];
    match (m.client.ends_at_done, m.server.done_unix_s) {
        (true, Some(done)) => done,
        _ => last_write,
    }
}

/// Chunk `k` is read after it was written: every text chunk when both sides counted the same
/// chunks (else the first), and the end.
fn causal_pairs(m: &Matched) -> CausalPairs {
    let (writes, arrivals) = (&m.server.delta_writes_unix_s, &m.client.chunk_times_s);
    let mut write_arrivals: Vec<(f64, f64)> = if writes.len() == arrivals.len() {
        writes
            .iter()
            .copied()
            .zip(arrivals.iter().copied())
            .collect()
    } else {
        vec![(writes[0], arrivals[0])]
    };
    write_arrivals.push((server_end(m), m.client.end_s));
    CausalPairs {
        send_received: (m.client.send_s, m.server.received_unix_s),
        write_arrivals,
    }
}

/// `(last − first) / (tokens − 1)`, as TPOT is defined; nothing for a single token.
fn tpot(first_s: f64, last_s: f64, num_tokens: usize) -> Vec<f64> {
    if num_tokens < 2 {
        return Vec::new();
    }
    vec![(last_s - first_s) / (num_tokens - 1) as f64]
}

fn gaps(times_s: &[f64]) -> Vec<f64> {
    times_s.windows(2).map(|w| w[1] - w[0]).collect()
}

/// For each request sent after another one ended: its send − the latest end before it. In a
/// closed loop this is how long a freed slot waited for its next request.
fn dispatch_gaps(client: &[ClientRequest]) -> Vec<f64> {
    let mut ends: Vec<f64> = client.iter().map(|c| c.end_s).collect();
    ends.sort_by(f64::total_cmp);
    client
        .iter()
        .filter_map(|c| {
            let before = ends.partition_point(|&end| end <= c.send_s);
            (before > 0).then(|| c.send_s - ends[before - 1])
        })
        .collect()
}

#[cfg(test)]
mod tests;
