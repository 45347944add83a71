//! The offset between a client's clock and the server's, estimated from causality alone: a
//! request reaches the server after the client sent it, and a chunk reaches the client after the
//! server wrote it. With `server = client + θ`:
//!
//! - every request gives an upper bound: `θ ≤ received − send`;
//! - every written chunk gives a lower bound: `θ ≥ write − arrival` (each text chunk, and the
//!   client's end against the server's end of the same span; see `super::causal_pairs`).
//!
//! The estimate is the middle of `[max lower, min upper]`; half its width is the uncertainty
//! (on one machine, well under a millisecond). Bounds that cross mean the requests were matched
//! wrongly (or the clocks drifted during the run): that is an error, not an estimate.

use serde::Serialize;

/// The offset and its bounds, seconds (`server = client + offset_s`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockOffset {
    pub offset_s: f64,
    pub lower_bound_s: f64,
    pub upper_bound_s: f64,
}

impl ClockOffset {
    /// Half the width of the bounds: how far the estimate can be from the truth.
    pub fn uncertainty_s(&self) -> f64 {
        (self.upper_bound_s - self.lower_bound_s) / 2.0
    }
}

/// One request's causal pairs: `(client send, server received)` and every
/// `(server write, client arrival)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CausalPairs {
    pub send_received: (f64, f64),
    pub write_arrivals: Vec<(f64, f64)>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OffsetError {
    #[error("no matched requests to estimate the clock offset from")]
    NoPairs,
    #[error(
        "the clock bounds cross (lower {lower_s:.6} s > upper {upper_s:.6} s): the requests \
         were matched to the wrong server records, or a clock stepped during the run"
    )]
    Crossed { lower_s: f64, upper_s: f64 },
}

/// The offset all `pairs` allow.
pub fn estimate_offset(pairs: &[CausalPairs]) -> Result<ClockOffset, OffsetError> {
    let upper = pairs
        .iter()
        .map(|p| p.send_received.1 - p.send_received.0)
        .min_by(f64::total_cmp)
        .ok_or(OffsetError::NoPairs)?;
    let lower = pairs
        .iter()
        .flat_map(|p| {
            p.write_arrivals
                .iter()
                .map(|(write, arrival)| write - arrival)
        })
        .max_by(f64::total_cmp)
        .ok_or(OffsetError::NoPairs)?;
    if lower > upper {
        return Err(OffsetError::Crossed {
            lower_s: lower,
            upper_s: upper,
        });
    }
    Ok(ClockOffset {
        offset_s: (lower + upper) / 2.0,
        lower_bound_s: lower,
        upper_bound_s: upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request sent at `send` (client clock), received 0.3 ms later, one chunk written at
    /// `write` (server clock) and read 0.2 ms later; the server's clock is `θ` ahead.
    fn pairs(theta: f64, send: f64, write: f64) -> CausalPairs {
        CausalPairs {
            send_received: (send, send + theta + 0.0003),
            write_arrivals: vec![(write, write - theta + 0.0002)],
        }
    }

    #[test]
    fn the_offset_is_found_within_the_transit_times() {
        let theta = 1_795_000_000.123;
        let all: Vec<CausalPairs> = (0..20)
            .map(|i| pairs(theta, i as f64, theta + i as f64 + 0.05))
            .collect();
        let offset = estimate_offset(&all).expect("an offset");
        assert!((offset.offset_s - theta).abs() <= 0.0003, "{offset:?}");
        assert!(offset.uncertainty_s() < 0.0003, "{offset:?}");
        assert!(offset.lower_bound_s <= theta + 1e-6 && theta - 1e-6 <= offset.upper_bound_s);
    }

    #[test]
    fn mismatched_requests_cross_the_bounds() {
        // A "response" that arrived before the request was received: impossible.
        let wrong = CausalPairs {
            send_received: (0.0, 1.0),
            write_arrivals: vec![(5.0, 0.5)],
        };
        assert!(matches!(
            estimate_offset(&[wrong]),
            Err(OffsetError::Crossed { .. })
        ));
        assert_eq!(estimate_offset(&[]), Err(OffsetError::NoPairs));
    }
}
