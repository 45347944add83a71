//! The int8 kernel for AVX2+FMA: one weight row against up to three activation rows per pass,
//! dequantizing 8 weights at a time in registers (the autovectoriser leaves this loop scalar).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::block::{QuantBlock, GROUP_SIZE};

/// Activation rows per pass: 3 rows × 4 accumulators leave registers for the weights.
const ROWS_PER_PASS: usize = 3;

/// Whether this CPU runs [`rows_avx2`].
pub fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// `out[r * m + i] = dot(weights row r, x row i)`; the caller checked [`available`].
pub fn rows_avx2(block: QuantBlock<'_>, x: &[f32], m: usize, out: &mut [f32]) {
    let cols = block.cols;
    for r in 0..block.num_rows() {
        let (quants, scales) = block.row(r);
        let mut start = 0;
        while start < m {
            let count = (m - start).min(ROWS_PER_PASS);
            let xs = &x[start * cols..(start + count) * cols];
            // SAFETY: the caller checked `available()`; `quants` holds whole groups (cols is a
            // multiple of 32, checked at quantization) and `xs` holds `count` rows of `cols`.
            let sums = unsafe { dot_rows(quants, scales, xs, count) };
            out[r * m + start..r * m + start + count].copy_from_slice(&sums[..count]);
            start += count;
        }
    }
}

/// Dot products of one int8 weight row with `count` (≤ 3) f32 rows, dequantizing on the fly.
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_rows(quants: &[i8], scales: &[f32], xs: &[f32], count: usize) -> [f32; ROWS_PER_PASS] {
    let cols = quants.len();
    let mut acc = [[_mm256_setzero_ps(); 4]; ROWS_PER_PASS];
    for (group, &scale) in scales.iter().enumerate() {
        let scale = _mm256_set1_ps(scale);
        for part in 0..4 {
            let offset = group * GROUP_SIZE + part * 8;
            let bytes = _mm_loadl_epi64(quants.as_ptr().add(offset) as *const __m128i);
            let weights = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scale);
            for (i, acc) in acc.iter_mut().enumerate().take(count) {
                let x = _mm256_loadu_ps(xs.as_ptr().add(i * cols + offset));
                acc[part] = _mm256_fmadd_ps(weights, x, acc[part]);
            }
        }
    }
    let mut sums = [0.0f32; ROWS_PER_PASS];
    for (sum, acc) in sums.iter_mut().zip(&acc).take(count) {
        *sum = horizontal_sum(_mm256_add_ps(
            _mm256_add_ps(acc[0], acc[1]),
            _mm256_add_ps(acc[2], acc[3]),
        ));
    }
    sums
}

#[target_feature(enable = "avx2,fma")]
unsafe fn horizontal_sum(v: __m256) -> f32 {
    let halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
    _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)))
}
