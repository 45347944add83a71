//! How many blocks a number of tokens needs.

/// Number of blocks needed to hold `num_tokens` tokens.
pub fn num_blocks_for(num_tokens: usize, block_size: usize) -> usize {
    num_tokens.div_ceil(block_size)
}
