//! The KV cache's size in bytes: the budget given, else what the scheduler's limits can use —
//! `max_num_seqs` sequences of `max_model_len` tokens, each rounded up to whole blocks — at most
//! `DEFAULT_KV_CACHE_MEMORY_BYTES`, and never less than one sequence of `max_model_len`. Pure
//! arithmetic; the CPU cache's memory is committed only as blocks are written, so a large
//! budget costs address space, not memory, until it is used.

use crate::config::DEFAULT_KV_CACHE_MEMORY_BYTES;

/// What sizes the cache when no budget is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizingLimits {
    pub max_num_seqs: usize,
    pub max_model_len: usize,
    pub block_size: usize,
    pub kv_bytes_per_token: usize,
}

/// Why the cache has its size (logged at start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeReason {
    /// `kv_cache_memory_bytes` (`--kv-cache-memory`, or the GPU's measured budget).
    Given,
    /// What `max_num_seqs × max_model_len` tokens can use, under the cap.
    Needed,
    /// Capped at `DEFAULT_KV_CACHE_MEMORY_BYTES`.
    Capped,
    /// One sequence of `max_model_len` tokens, which alone needs more than the cap.
    OneSequence,
}

impl SizeReason {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Given => {
                "the budget given: --kv-cache-memory, or on a GPU what --gpu-memory-utilization leaves"
            }
            Self::Needed => "what max_num_seqs sequences of max_model_len tokens can use",
            Self::Capped => {
                "capped at 1 GiB: max_num_seqs sequences of max_model_len tokens would need more"
            }
            Self::OneSequence => {
                "one sequence of max_model_len tokens, which alone needs more than the 1 GiB cap"
            }
        }
    }
}

/// The cache's size and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSize {
    pub bytes: usize,
    pub reason: SizeReason,
}

/// The given budget, else the size the limits call for.
pub fn kv_cache_size(given_bytes: Option<usize>, limits: &SizingLimits) -> CacheSize {
    if let Some(bytes) = given_bytes {
        return CacheSize {
            bytes,
            reason: SizeReason::Given,
        };
    }
    let block_bytes = limits.block_size.saturating_mul(limits.kv_bytes_per_token);
    let one_sequence_bytes = limits
        .max_model_len
        .div_ceil(limits.block_size.max(1))
        .saturating_mul(block_bytes);
    let needed_bytes = one_sequence_bytes.saturating_mul(limits.max_num_seqs);
    let (bytes, reason) = if needed_bytes <= DEFAULT_KV_CACHE_MEMORY_BYTES {
        (needed_bytes, SizeReason::Needed)
    } else if one_sequence_bytes > DEFAULT_KV_CACHE_MEMORY_BYTES {
        (one_sequence_bytes, SizeReason::OneSequence)
    } else {
        (DEFAULT_KV_CACHE_MEMORY_BYTES, SizeReason::Capped)
    };
    CacheSize { bytes, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmolLM2-135M in an f16 cache: 30 layers × K,V × 3 heads × 64 dims × 2 bytes.
    const SMOLLM2_F16_BYTES_PER_TOKEN: usize = 23_040;

    fn limits(max_num_seqs: usize, max_model_len: usize) -> SizingLimits {
        SizingLimits {
            max_num_seqs,
            max_model_len,
            block_size: 16,
            kv_bytes_per_token: SMOLLM2_F16_BYTES_PER_TOKEN,
        }
    }

    #[test]
    fn a_given_budget_wins() {
        let size = kv_cache_size(Some(12345), &limits(256, 8192));
        assert_eq!((size.bytes, size.reason), (12345, SizeReason::Given));
    }

    #[test]
    fn small_limits_get_what_they_can_use_in_whole_blocks() {
        // 8 sequences × 2048 tokens = 1024 blocks of 16 tokens: 360 MiB, under the cap.
        let size = kv_cache_size(None, &limits(8, 2048));
        assert_eq!(size.reason, SizeReason::Needed);
        assert_eq!(size.bytes, 8 * 2048 * SMOLLM2_F16_BYTES_PER_TOKEN);
        // 100 tokens round up to 7 blocks per sequence.
        let size = kv_cache_size(None, &limits(3, 100));
        assert_eq!(size.bytes, 3 * 7 * 16 * SMOLLM2_F16_BYTES_PER_TOKEN);
    }

    #[test]
    fn large_limits_are_capped_at_the_old_default() {
        let size = kv_cache_size(None, &limits(256, 8192));
        assert_eq!(size.reason, SizeReason::Capped);
        assert_eq!(size.bytes, DEFAULT_KV_CACHE_MEMORY_BYTES);
        let size = kv_cache_size(None, &limits(usize::MAX, 8192));
        assert_eq!(size.reason, SizeReason::Capped);
    }

    #[test]
    fn one_sequence_of_max_model_len_always_fits() {
        // 65536 tokens of a wide model: 3 GiB for one sequence, above the cap.
        let wide = SizingLimits {
            kv_bytes_per_token: 49_152,
            ..limits(4, 65_536)
        };
        let size = kv_cache_size(None, &wide);
        assert_eq!(size.reason, SizeReason::OneSequence);
        assert_eq!(size.bytes, 65_536 * 49_152);
    }
}
