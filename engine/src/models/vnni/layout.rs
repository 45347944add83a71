//! The interleaved layout's geometry: how many bytes and factors a block of 16 weight rows holds
//! per group of 32 columns, and one block as the kernel reads it.

use crate::models::int8::GROUP_SIZE;

/// Weight rows per block: one per 32-bit lane of a 512-bit register.
pub const BLOCK_ROWS: usize = 16;
/// Bytes per chunk: one 512-bit register.
pub const CHUNK_BYTES: usize = 64;
/// Activation rows per tile: their int32 and f32 accumulators stay in registers.
pub const MAX_ACTIVATION_ROWS: usize = 4;

/// How many bits a weight code has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeBits {
    /// 0..=15, `w = scale · q + min`.
    Four,
    /// The int8 value + 128, `w = scale · (q − 128)`.
    Eight,
}

impl CodeBits {
    /// A row's bytes per group in the source format.
    pub fn row_bytes(self) -> usize {
        match self {
            CodeBits::Four => GROUP_SIZE / 2,
            CodeBits::Eight => GROUP_SIZE,
        }
    }

    /// A block's bytes per group.
    pub fn group_bytes(self) -> usize {
        self.row_bytes() * BLOCK_ROWS
    }

    /// A block's f32 factors per group: 16 scales, and 16 offsets for 4-bit codes.
    pub fn group_factors(self) -> usize {
        match self {
            CodeBits::Four => 2 * BLOCK_ROWS,
            CodeBits::Eight => BLOCK_ROWS,
        }
    }
}

/// One block of 16 weight rows: its codes and factors, group after group.
#[derive(Debug, Clone, Copy)]
pub struct BlockView<'a> {
    pub codes: &'a [u8],
    pub factors: &'a [f32],
    pub bits: CodeBits,
    pub num_groups: usize,
}
