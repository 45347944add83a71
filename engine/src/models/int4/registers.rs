//! Int4 rows as the AVX-512 tile kernels read them: a group's 16 packed bytes widened once to 16
//! lanes, whose low nibbles are values 0–15 and high nibbles values 16–31, looked up in the
//! group's table of its 16 possible values. The products `scale · q` are exact in f32 (an f16
//! scale times a 4-bit value), so the table's fused multiply-adds round as the plain
//! `q · scale + min` does: both give the same bits.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{Int4Block, GROUP_SIZE, NIBBLE_BYTES};
use crate::models::int8::RegisterRows;

impl RegisterRows for Int4Block<'_> {
    /// The group's bytes widened to 16 lanes, and its 16 possible values `scale · q + min`.
    type Group = (__m512i, __m512);

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn group(&self, row: usize, group: usize) -> Self::Group {
        let index = row * (self.cols / GROUP_SIZE) + group;
        let bytes = _mm_loadu_si128(self.nibbles.as_ptr().add(index * NIBBLE_BYTES) as *const __m128i);
        let codes = _mm512_setr_ps(
            0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0,
        );
        let table = _mm512_fmadd_ps(
            codes,
            _mm512_set1_ps(*self.scales.get_unchecked(index)),
            _mm512_set1_ps(*self.mins.get_unchecked(index)),
        );
        (_mm512_cvtepu8_epi32(bytes), table)
    }

    /// A lane's value is the table's entry at its nibble (`vpermps` reads an index's low 4 bits,
    /// so the low nibble needs no mask).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn values16((wide, table): Self::Group, half: usize) -> __m512 {
        let indices = if half == 0 { wide } else { _mm512_srli_epi32::<4>(wide) };
        _mm512_permutexvar_ps(indices, table)
    }
}
