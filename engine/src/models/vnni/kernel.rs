//! The AVX-512 VNNI kernel: 16 weight rows (one block) times up to `MAX_ACTIVATION_ROWS`
//! activation rows. For each group of 32 columns, `vpdpbusd` multiplies the block's unsigned codes
//! (4 bytes of one row per 32-bit lane) by 4 broadcast int8 activation codes and adds them into
//! the lane, so after 8 such steps every lane holds its row's exact integer dot product for the
//! group; one conversion and fused multiply-add per group then apply the weight's and the
//! activation's scales (and, for 4-bit codes, the weight's offset times the activation's sum).
//! With 15-bit activations each group takes a second `vpdpbusd` per register of codes, for the
//! low plane, and its dot product is `128 · high + low`, still exact in int32.
//! The order of every output's sums depends on neither the row count nor the tile: a row's
//! result is the same bits in any batch.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::activations::{ActivationBits, QuantizedActivations};
use super::layout::{BlockView, CodeBits, BLOCK_ROWS, CHUNK_BYTES, MAX_ACTIVATION_ROWS};
use crate::models::int8::GROUP_SIZE;


/// How far ahead of the group being multiplied its codes are prefetched.
const PREFETCH_BYTES: usize = 2048;

/// Whether this CPU has the instructions (AVX-512 F and BW, and VNNI).
pub fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// The block's 16 outputs for activation rows `first..first + count` (count at most
/// [`MAX_ACTIVATION_ROWS`]), `out[a * 16 + lane]`; the caller checked [`available`].
pub fn block_tile(block: BlockView<'_>, x: &QuantizedActivations, first: usize, count: usize, out: &mut [f32]) {
    assert_eq!(block.codes.len(), block.num_groups * block.bits.group_bytes());
    assert_eq!(block.factors.len(), block.num_groups * block.bits.group_factors());
    assert!(x.cols == block.num_groups * GROUP_SIZE && first + count <= x.num_rows());
    assert!(count <= MAX_ACTIVATION_ROWS && out.len() >= count * BLOCK_ROWS);
    let fine = x.bits == ActivationBits::Fifteen;
    assert_eq!(x.low_codes.len(), if fine { x.codes.len() } else { 0 });
    macro_rules! tiles {
        ($($a:literal),*) => {
            match (count, block.bits, fine) {
                $(($a, CodeBits::Four, false) => unsafe { tile::<$a, true, false>(block, x, first, out) },)*
                $(($a, CodeBits::Eight, false) => unsafe { tile::<$a, false, false>(block, x, first, out) },)*
                $(($a, CodeBits::Four, true) => unsafe { tile::<$a, true, true>(block, x, first, out) },)*
                $(($a, CodeBits::Eight, true) => unsafe { tile::<$a, false, true>(block, x, first, out) },)*
                _ => {}
            }
        };
    }
    // SAFETY: the block and rows are checked above, the CPU features by the caller.
    tiles!(1, 2, 3, 4)
}

/// Broadcasts the 4 activation codes at `codes`.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn four_codes(codes: *const i8) -> __m512i {
    _mm512_set1_epi32((codes as *const i32).read_unaligned())
}

// The accumulators are indexed by activation row in plain loops: clearer than iterators.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile<const A: usize, const FOUR: bool, const FINE: bool>(
    block: BlockView<'_>,
    x: &QuantizedActivations,
    first: usize,
    out: &mut [f32],
) {
    let num_groups = block.num_groups;
    let (group_bytes, group_factors) = (block.bits.group_bytes(), block.bits.group_factors());
    let low_nibbles = _mm512_set1_epi8(0x0F);
    let mut sums = [_mm512_setzero_ps(); A];
    for group in 0..num_groups {
        let codes = block.codes.as_ptr().add(group * group_bytes);
        for line in 0..group_bytes / CHUNK_BYTES {
            _mm_prefetch::<_MM_HINT_T0>(codes.wrapping_add(PREFETCH_BYTES + line * CHUNK_BYTES) as *const i8);
        }
        let factors = block.factors.as_ptr().add(group * group_factors);
        _mm_prefetch::<_MM_HINT_T0>(factors.wrapping_add(PREFETCH_BYTES / 4) as *const i8);
        // Two chains of sums per row (low and high nibbles, or even and odd chunks), so that
        // consecutive `vpdpbusd`s do not wait on each other.
        // With 15-bit activations, `lows` are the low plane's sums, in two chains the same way.
        let mut dots = [[_mm512_setzero_si512(); 2]; A];
        let mut lows = [[_mm512_setzero_si512(); 2]; A];
        let row_codes = |codes: &[i8], a: usize| codes.as_ptr().add((first + a) * x.cols + group * GROUP_SIZE);
        let xs: [*const i8; A] = std::array::from_fn(|a| row_codes(&x.codes, a));
        let xs_low: [*const i8; A] = std::array::from_fn(|a| if FINE { row_codes(&x.low_codes, a) } else { xs[a] });
        if FOUR {
            // Chunk c's low nibbles are values 4c..4c+4 of each row, its high ones 16+4c..20+4c.
            for chunk in 0..4 {
                let packed = _mm512_loadu_si512(codes.add(chunk * CHUNK_BYTES) as *const _);
                let low = _mm512_and_si512(packed, low_nibbles);
                let high = _mm512_and_si512(_mm512_srli_epi16::<4>(packed), low_nibbles);
                for a in 0..A {
                    dots[a][0] = _mm512_dpbusd_epi32(dots[a][0], low, four_codes(xs[a].add(4 * chunk)));
                    dots[a][1] = _mm512_dpbusd_epi32(dots[a][1], high, four_codes(xs[a].add(16 + 4 * chunk)));
                    if FINE {
                        lows[a][0] = _mm512_dpbusd_epi32(lows[a][0], low, four_codes(xs_low[a].add(4 * chunk)));
                        lows[a][1] = _mm512_dpbusd_epi32(lows[a][1], high, four_codes(xs_low[a].add(16 + 4 * chunk)));
                    }
                }
            }
        } else {
            for chunk in 0..8 {
                let packed = _mm512_loadu_si512(codes.add(chunk * CHUNK_BYTES) as *const _);
                for a in 0..A {
                    let chain = &mut dots[a][chunk % 2];
                    *chain = _mm512_dpbusd_epi32(*chain, packed, four_codes(xs[a].add(4 * chunk)));
                    if FINE {
                        let chain = &mut lows[a][chunk % 2];
                        *chain = _mm512_dpbusd_epi32(*chain, packed, four_codes(xs_low[a].add(4 * chunk)));
                    }
                }
            }
        }
        let dots: [__m512i; A] = std::array::from_fn(|a| {
            let high = _mm512_add_epi32(dots[a][0], dots[a][1]);
            if FINE {
                let low = _mm512_add_epi32(lows[a][0], lows[a][1]);
                _mm512_add_epi32(_mm512_slli_epi32::<7>(high), low)
            } else {
                high
            }
        });
        let scales = _mm512_loadu_ps(factors);
        for a in 0..A {
            let at = (first + a) * num_groups + group;
            let x_scale = *x.scales.get_unchecked(at);
            let code_sum = *x.code_sums.get_unchecked(at);
            let both = _mm512_mul_ps(scales, _mm512_set1_ps(x_scale));
            if FOUR {
                let mins = _mm512_loadu_ps(factors.add(BLOCK_ROWS));
                sums[a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[a]), both, sums[a]);
                sums[a] = _mm512_fmadd_ps(mins, _mm512_set1_ps(x_scale * code_sum as f32), sums[a]);
            } else {
                // Codes are the int8 values plus 128: take 128 × the activations' sum back.
                let exact = _mm512_sub_epi32(dots[a], _mm512_set1_epi32(128 * code_sum));
                sums[a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), both, sums[a]);
            }
        }
    }
    for a in 0..A {
        _mm512_storeu_ps(out.as_mut_ptr().add(a * BLOCK_ROWS), sums[a]);
    }
}
