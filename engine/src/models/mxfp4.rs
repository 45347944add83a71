//! MXFP4 (OCP microscaling FP4), as gpt-oss's released checkpoints store their experts: blocks
//! of 32 values, each value a 4-bit E2M1 float (two per byte, the low nibble first), each block
//! scaled by a power of two whose E8M0 exponent byte is stored apart (`2^(byte − 127)`).
//! Dequantized once at load into f32; the weight format then converts it like any weight.

/// The sixteen E2M1 values, by their 4-bit code (sign bit highest).
const E2M1: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// Bytes per block of 32 values.
pub const BLOCK_BYTES: usize = 16;

/// Dequantizes `blocks` (`[rows, num_blocks, 16]` bytes, flattened) with `scales`
/// (`[rows, num_blocks]` exponent bytes) into `[rows, num_blocks · 32]` f32, row-major.
/// `None` when the lengths disagree.
pub fn dequantize(blocks: &[u8], scales: &[u8]) -> Option<Vec<f32>> {
    if blocks.len() != scales.len() * BLOCK_BYTES {
        return None;
    }
    let mut out = Vec::with_capacity(blocks.len() * 2);
    for (block, &exponent) in blocks.chunks_exact(BLOCK_BYTES).zip(scales) {
        let scale = 2f32.powi(i32::from(exponent) - 127);
        for &byte in block {
            out.push(E2M1[usize::from(byte & 0x0f)] * scale);
            out.push(E2M1[usize::from(byte >> 4)] * scale);
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nibbles_low_first_scaled_by_their_blocks_power_of_two() {
        let mut blocks = vec![0u8; 2 * BLOCK_BYTES];
        blocks[0] = 0x72; // 1.0 then 6.0
        blocks[1] = 0x9f; // -6.0 then -0.5
        blocks[BLOCK_BYTES] = 0x35; // 3.0 then 1.5
        let out = dequantize(&blocks, &[127, 129]).unwrap();
        assert_eq!(out.len(), 64);
        assert_eq!(&out[..4], &[1.0, 6.0, -6.0, -0.5]);
        assert!(out[4..32].iter().all(|v| *v == 0.0));
        assert_eq!(&out[32..34], &[12.0, 6.0], "block 2 is scaled by 2^2");
        assert_eq!(dequantize(&blocks, &[127]), None);
        let tiny = dequantize(&[0x01; BLOCK_BYTES], &[0]).unwrap();
        assert_eq!(tiny[0], 0.5 * 2f32.powi(-127));
    }
}
