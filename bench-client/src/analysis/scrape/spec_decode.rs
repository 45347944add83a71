//! Speculative decoding's counters (vLLM's names, exported by vLLM and by pagoda-server when they
//! speculate) and what the run's window makes of them: vLLM's acceptance rate, mean acceptance
//! length and per-position acceptance, as `vllm bench serve` derives them.
//!
//! - `<ns>:spec_decode_num_drafts_total`: proposals verified (one per sequence per step that
//!   proposed at least one token);
//! - `<ns>:spec_decode_num_draft_tokens_total`: tokens proposed;
//! - `<ns>:spec_decode_num_accepted_tokens_total`: proposed tokens accepted;
//! - `<ns>:spec_decode_num_accepted_tokens_per_pos_total{position="p"}`: proposals whose token
//!   at 0-based position `p` was accepted.
//!
//! Every series is summed over its label sets (per position for the last), and the window's
//! value is the counter's delta (after − before).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::prometheus::{counter_delta, Exposition};

use super::series::{
    SPEC_DECODE_NUM_ACCEPTED_TOKENS as NUM_ACCEPTED_TOKENS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS_PER_POS as NUM_ACCEPTED_TOKENS_PER_POS,
    SPEC_DECODE_NUM_DRAFTS as NUM_DRAFTS, SPEC_DECODE_NUM_DRAFT_TOKENS as NUM_DRAFT_TOKENS,
};
const LABEL_POSITION: &str = "position";

/// Speculative decoding over the run's window, from the server's counters. Present only when
/// the server exports them and proposed at least one token during the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeStats {
    /// Proposals verified (`spec_decode_num_drafts_total`'s delta).
    pub num_drafts: u64,
    /// Tokens proposed (`spec_decode_num_draft_tokens_total`'s delta).
    pub num_draft_tokens: u64,
    /// Proposed tokens accepted (`spec_decode_num_accepted_tokens_total`'s delta).
    pub num_accepted_tokens: u64,
    /// Accepted ÷ draft tokens, a fraction 0–1 (vLLM's report prints it in percent).
    pub acceptance_rate: f64,
    /// 1 + accepted ÷ drafts: tokens generated per verification step (vLLM's "acceptance
    /// length").
    pub mean_acceptance_length: f64,
    /// Per 0-based position in a proposal, the proposals whose token there was accepted
    /// (`spec_decode_num_accepted_tokens_per_pos_total{position}`'s delta).
    pub num_accepted_tokens_per_pos: Vec<u64>,
    /// Per position, accepted ÷ drafts, a fraction 0–1: each position's acceptance rate.
    pub per_position_acceptance_rate: Vec<f64>,
}

/// The counters at one scrape, summed over label sets.
#[derive(Debug, Clone, Default, PartialEq)]
struct Counters {
    num_drafts: f64,
    num_draft_tokens: f64,
    num_accepted_tokens: f64,
    /// Position → count.
    num_accepted_tokens_per_pos: BTreeMap<usize, f64>,
}

impl Counters {
    /// `None` unless the scrape has the three totals.
    fn read(namespace: &str, exposition: &Exposition) -> Option<Self> {
        let full = |base: &str| format!("{namespace}:{base}");
        let total = |base: &str| exposition.sum(&full(base));
        Some(Self {
            num_drafts: total(NUM_DRAFTS)?,
            num_draft_tokens: total(NUM_DRAFT_TOKENS)?,
            num_accepted_tokens: total(NUM_ACCEPTED_TOKENS)?,
            num_accepted_tokens_per_pos: per_position(
                exposition,
                &full(NUM_ACCEPTED_TOKENS_PER_POS),
            ),
        })
    }

    /// What the window added: `self` (after) − `earlier`, a counter that went down counted from
    /// zero (a restart).
    fn since(&self, earlier: Option<&Self>) -> Self {
        let delta = |later: f64, get: fn(&Self) -> f64| counter_delta(earlier.map(get), later);
        let num_accepted_tokens_per_pos = self
            .num_accepted_tokens_per_pos
            .iter()
            .map(|(&position, &later)| {
                let before = earlier.and_then(|e| e.num_accepted_tokens_per_pos.get(&position));
                (position, counter_delta(before.copied(), later))
            })
            .collect();
        Self {
            num_drafts: delta(self.num_drafts, |c| c.num_drafts),
            num_draft_tokens: delta(self.num_draft_tokens, |c| c.num_draft_tokens),
            num_accepted_tokens: delta(self.num_accepted_tokens, |c| c.num_accepted_tokens),
            num_accepted_tokens_per_pos,
        }
    }
}

/// The samples named `sample_name` summed per `position` label; samples without a numeric
/// position are left out.
fn per_position(exposition: &Exposition, sample_name: &str) -> BTreeMap<usize, f64> {
    let mut sums = BTreeMap::new();
    for sample in exposition.samples_named(sample_name) {
        let Some(position) = sample.label(LABEL_POSITION).and_then(|p| p.parse().ok()) else {
            continue;
        };
        *sums.entry(position).or_insert(0.0) += sample.value;
    }
    sums
}

/// The window's speculative decoding between two scrapes under `namespace`; `None` when the
/// last scrape lacks the counters or no token was proposed in between.
pub(super) fn spec_decode_stats(
    namespace: &str,
    before: &Exposition,
    after: &Exposition,
) -> Option<SpecDecodeStats> {
    let earlier = Counters::read(namespace, before);
    let window = Counters::read(namespace, after)?.since(earlier.as_ref());
    if window.num_draft_tokens <= 0.0 || window.num_drafts <= 0.0 {
        return None;
    }
    // Positions are 0..k; a position the server did not export counts as never accepted.
    let num_positions = window
        .num_accepted_tokens_per_pos
        .keys()
        .next_back()
        .map_or(0, |last| last + 1);
    let num_accepted_tokens_per_pos: Vec<f64> = (0..num_positions)
        .map(|p| {
            window
                .num_accepted_tokens_per_pos
                .get(&p)
                .copied()
                .unwrap_or(0.0)
        })
        .collect();
    Some(SpecDecodeStats {
        num_drafts: count(window.num_drafts),
        num_draft_tokens: count(window.num_draft_tokens),
        num_accepted_tokens: count(window.num_accepted_tokens),
        acceptance_rate: window.num_accepted_tokens / window.num_draft_tokens,
        mean_acceptance_length: 1.0 + window.num_accepted_tokens / window.num_drafts,
        per_position_acceptance_rate: num_accepted_tokens_per_pos
            .iter()
            .map(|accepted| accepted / window.num_drafts)
            .collect(),
        num_accepted_tokens_per_pos: num_accepted_tokens_per_pos.into_iter().map(count).collect(),
    })
}

/// A counter's value as a count (Prometheus writes them as floats).
fn count(value: f64) -> u64 {
    value.round().max(0.0) as u64
}

#[cfg(test)]
#[path = "spec_decode_tests.rs"]
mod tests;
