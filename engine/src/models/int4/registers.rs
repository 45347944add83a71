//! Int4 rows as the AVX-512 tile kernels read them: a group's 16 packed bytes widened once to 16
//! lanes, whose low nibbles are values 0–15 and high nibbles values 16–31. The products
//! `scale · q` are exact in f32 (an f16 scale times a 4-bit value), so the fused multiply-add
//! rounds as the plain `q · scale + min` does: both give the same bits.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{Int4Block, GROUP_SIZE, NIBBLE_BYTES};
use crate::models::int8::RegisterRows;

impl RegisterRows for Int4Block<'_> {
    /// The group's bytes widened to 16 lanes, its scale and its offset, broadcast.
    type Group = (__m512i, __m512, __m512);

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn group(&self, row: usize, group: usize) -> Self::Group {
        let index = row * (self.cols / GROUP_SIZE) + group;
        let bytes = _mm_loadu_si128(self.nibbles.as_ptr().add(index * NIBBLE_BYTES) as *const __m128i);
        (
            _mm512_cvtepu8_epi32(bytes),
            _mm512_set1_ps(*self.scales.get_unchecked(index)),
            _mm512_set1_ps(*self.mins.get_unchecked(index)),
        )
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn values16((wide, scale, min): Self::Group, half: usize) -> __m512 {
        let values = if half == 0 {
            _mm512_and_si512(wide, _mm512_set1_epi32(0x0F))
        } else {
            _mm512_srli_epi32::<4>(wide)
        };
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(values), scale, min)
    }
}
