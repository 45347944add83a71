//! [`TraceSummary`]: what a result file records about the trace it replayed (`pagoda.trace`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::request::TraceRequest;

/// The replayed trace, as the result JSON's `pagoda.trace` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// `mooncake`, `burstgpt` or `azure`.
    pub format: String,
    pub path: String,
    /// Data records in the file (before any model filter).
    pub num_records: usize,
    /// Records left out: another model's (`--trace-model`), or 0 input or 0 output tokens.
    pub num_skipped: usize,
    /// Requests replayed (after `--duration` and `--trace-max-requests`).
    pub num_replayed: usize,
    pub time_scale: f64,
    /// From the first to the last replayed request on the trace's own clock, in seconds.
    pub trace_span_s: f64,
    /// The same span on the replay's clock (`trace_span_s × time_scale`).
    pub replay_span_s: f64,
    /// Prompt tokens per hash id (Mooncake only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<usize>,
    /// `--trace-model` (BurstGPT only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Prompt tokens of the replayed requests (the trace's input lengths).
    pub num_input_tokens: usize,
    /// Prompt tokens an unbounded prefix cache would find (Mooncake only): see
    /// [`ideal_prefix_hit_tokens`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ideal_prefix_hit_tokens: Option<usize>,
}

/// The prompt tokens that an unbounded, token-granular prefix cache would serve from earlier
/// requests of `requests` (in replay order): each request's leading blocks whose hash ids came
/// before, as far as earlier prompts held those blocks' tokens. A server's cache hits less: it
/// keeps whole blocks of its own size, may evict, and computes a prompt's last token anyway.
pub fn ideal_prefix_hit_tokens(requests: &[TraceRequest], block_size: usize) -> usize {
    // Per hash id, the most tokens of its block any earlier prompt held.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut num_hit_tokens = 0;
    for request in requests {
        let mut hitting = true;
        let mut position = 0;
        for &hash_id in &request.hash_ids {
            let needed = block_size.min(request.input_tokens.saturating_sub(position));
            if needed == 0 {
                break;
            }
            let held = seen.get(&hash_id).copied().unwrap_or(0);
            if hitting {
                num_hit_tokens += held.min(needed);
                hitting = held >= needed;
            }
            seen.insert(hash_id, held.max(needed));
            position += needed;
        }
    }
    num_hit_tokens
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request(input_tokens: usize, hash_ids: &[u64]) -> TraceRequest {
        TraceRequest {
            timestamp_s: 0.0,
            input_tokens,
            output_tokens: 1,
            hash_ids: hash_ids.to_vec(),
        }
    }

    #[test]
    fn counts_leading_blocks_seen_before() {
        let requests = [
            request(96, &[1, 2, 3]),
            request(90, &[1, 2, 4]), // 64 hit
            request(64, &[5, 2]),    // 0: the first block is new
            request(40, &[1, 2]),    // 32 + 8
            request(20, &[6]),
        ];
        assert_eq!(ideal_prefix_hit_tokens(&requests, 32), 64 + 40);
    }

    #[test]
    fn a_block_held_only_in_part_hits_that_part() {
        let requests = [
            request(40, &[1, 2]), // block 2: 8 tokens held
            request(64, &[1, 2]), // 32 + 8, then stops
            request(64, &[1, 2]), // the second request held all of block 2
        ];
        assert_eq!(ideal_prefix_hit_tokens(&requests, 32), 40 + 64);
    }
}
