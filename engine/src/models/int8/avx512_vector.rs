//! The AVX-512 int8 kernel for one activation row (a decode token, or an expert that one token
//! of the step chose): a matrix-vector product. Four weight rows share each activation load; a
//! group's 32 products are summed before its scale multiplies them once (the tile kernel scales
//! every dequantized vector, which a single activation row cannot amortize), so a group costs two
//! sign-extending loads, two conversions and three FMAs per row.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::block::{QuantBlock, GROUP_SIZE};

/// Weight rows per pass: their four accumulators and the two activation vectors stay in
/// registers with room for the loads in flight.
const ROWS_PER_PASS: usize = 4;

/// `out[r] = dot(weights row r, x)` for every row of `block` (`x` is one row of `cols`); the
/// caller checked that the CPU runs AVX-512F.
pub fn rows_one_activation(block: QuantBlock<'_>, x: &[f32], out: &mut [f32]) {
    assert!(x.len() >= block.cols && out.len() >= block.num_rows());
    let mut first_row = 0;
    while first_row < block.num_rows() {
        let count = (block.num_rows() - first_row).min(ROWS_PER_PASS);
        // SAFETY: the rows lie inside `block`, `x` holds `cols` values (checked above), and the
        // caller checked the CPU feature.
        let sums = unsafe {
            match count {
                4 => dots::<4>(block, first_row, x),
                3 => dots::<3>(block, first_row, x),
                2 => dots::<2>(block, first_row, x),
                _ => dots::<1>(block, first_row, x),
            }
        };
        out[first_row..first_row + count].copy_from_slice(&sums[..count]);
        first_row += count;
    }
}

/// The dot products of rows `first_row..first_row + R` with `x`.
#[target_feature(enable = "avx512f")]
unsafe fn dots<const R: usize>(block: QuantBlock<'_>, first_row: usize, x: &[f32]) -> [f32; ROWS_PER_PASS] {
    let (cols, num_groups) = (block.cols, block.num_groups());
    let quants = block.quants.as_ptr().add(first_row * cols);
    let scales = block.scales.as_ptr().add(first_row * num_groups);
    let mut acc = [_mm512_setzero_ps(); R];
    for group in 0..num_groups {
        let offset = group * GROUP_SIZE;
        let low = _mm512_loadu_ps(x.as_ptr().add(offset));
        let high = _mm512_loadu_ps(x.as_ptr().add(offset + 16));
        for (r, acc) in acc.iter_mut().enumerate() {
            let values = quants.add(r * cols + offset);
            let w_low = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(values as *const __m128i)));
            let w_high = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(values.add(16) as *const __m128i)));
            let group_sum = _mm512_fmadd_ps(w_high, high, _mm512_mul_ps(w_low, low));
            let scale = _mm512_set1_ps(*scales.add(r * num_groups + group));
            *acc = _mm512_fmadd_ps(group_sum, scale, *acc);
        }
    }
    let mut sums = [0.0f32; ROWS_PER_PASS];
    for (sum, acc) in sums.iter_mut().zip(&acc) {
        *sum = _mm512_reduce_add_ps(*acc);
    }
    sums
}
