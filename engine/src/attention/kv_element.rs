//! `KvElement`: the element types the CPU KV cache stores — f32, f16 and bf16. Rows are stored
//! rounded to the element type (round to nearest even) and read back widened to f32, a row at a
//! time into a small scratch buffer, by the attention kernel: on x86-64 with F16C
//! (`_mm256_cvtph_ps`) for f16 and a 16-bit shift for bf16, with portable code elsewhere.

use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use half::{bf16, f16};

/// Proof that this CPU runs AVX2, FMA and F16C, checked at run time: only `detect` makes one,
/// so code holding one may use those instructions.
#[derive(Debug, Clone, Copy)]
pub struct X86Features {
    _checked: (),
}

impl X86Features {
    pub fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected;
            if is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
            {
                return Some(Self { _checked: () });
            }
        }
        None
    }
}

/// An element type of the CPU KV cache.
pub trait KvElement: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// How the cache holds it: a primitive, so a zeroed cache is allocated zeroed (calloc) and
    /// its pages are committed only when written.
    type Bits: Copy + Default + Send + Sync + std::fmt::Debug + 'static;

    fn view(bits: &[Self::Bits]) -> &[Self];
    fn view_mut(bits: &mut [Self::Bits]) -> &mut [Self];

    /// Rounds `src` into `dst` (of the same length).
    fn store(src: &[f32], dst: &mut [Self]);

    /// Whether `load` widens into the scratch it is given (f16, bf16) rather than returning
    /// `src` itself (f32).
    const WIDENS_INTO_SCRATCH: bool;

    /// `src` as f32: `src` itself for f32, else widened into `scratch` (at least as long).
    fn load<'a>(src: &'a [Self], scratch: &'a mut [f32]) -> &'a [f32];

    /// `load`, with AVX2 and F16C at hand.
    #[inline(always)]
    fn load_x86<'a>(src: &'a [Self], scratch: &'a mut [f32], _: X86Features) -> &'a [f32] {
        Self::load(src, scratch)
    }
}

impl KvElement for f32 {
    type Bits = f32;
    const WIDENS_INTO_SCRATCH: bool = false;

    fn view(bits: &[f32]) -> &[f32] {
        bits
    }

    fn view_mut(bits: &mut [f32]) -> &mut [f32] {
        bits
    }

    fn store(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }

    #[inline(always)]
    fn load<'a>(src: &'a [f32], _: &'a mut [f32]) -> &'a [f32] {
        src
    }
}

impl KvElement for f16 {
    type Bits = u16;
    const WIDENS_INTO_SCRATCH: bool = true;

    fn view(bits: &[u16]) -> &[f16] {
        bits.reinterpret_cast()
    }

    fn view_mut(bits: &mut [u16]) -> &mut [f16] {
        bits.reinterpret_cast_mut()
    }

    fn store(src: &[f32], dst: &mut [f16]) {
        dst.convert_from_f32_slice(src);
    }

    #[inline(always)]
    fn load<'a>(src: &'a [f16], scratch: &'a mut [f32]) -> &'a [f32] {
        let row = &mut scratch[..src.len()];
        src.convert_to_f32_slice(row);
        row
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn load_x86<'a>(src: &'a [f16], scratch: &'a mut [f32], proof: X86Features) -> &'a [f32] {
        let row = &mut scratch[..src.len()];
        x86::widen_f16(src, row, proof);
        row
    }
}

impl KvElement for bf16 {
    type Bits = u16;
    const WIDENS_INTO_SCRATCH: bool = true;

    fn view(bits: &[u16]) -> &[bf16] {
        bits.reinterpret_cast()
    }

    fn view_mut(bits: &mut [u16]) -> &mut [bf16] {
        bits.reinterpret_cast_mut()
    }

    fn store(src: &[f32], dst: &mut [bf16]) {
        dst.convert_from_f32_slice(src);
    }

    /// bf16 is f32's upper half: a shift, which the compiler vectorizes for the CPU at hand.
    #[inline(always)]
    fn load<'a>(src: &'a [bf16], scratch: &'a mut [f32]) -> &'a [f32] {
        let row = &mut scratch[..src.len()];
        for (wide, narrow) in row.iter_mut().zip(src) {
            *wide = f32::from_bits(u32::from(narrow.to_bits()) << 16);
        }
        row
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};

    use half::f16;

    use super::X86Features;

    /// Widens `src` into `dst` (of the same length), eight at a time.
    #[inline(always)]
    pub(super) fn widen_f16(src: &[f16], dst: &mut [f32], _: X86Features) {
        // SAFETY: an `X86Features` exists only where F16C and AVX were detected at run time.
        unsafe { widen_f16_f16c(src, dst) }
    }

    #[inline]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn widen_f16_f16c(src: &[f16], dst: &mut [f32]) {
        let len = src.len().min(dst.len());
        let head = len / 8 * 8;
        for start in (0..head).step_by(8) {
            // SAFETY: `start + 8 <= len`, within both slices; unaligned loads and stores.
            unsafe {
                let halves = _mm_loadu_si128(src.as_ptr().add(start).cast::<__m128i>());
                _mm256_storeu_ps(dst.as_mut_ptr().add(start), _mm256_cvtph_ps(halves));
            }
        }
        if head < len {
            widen_tail(&src[head..len], &mut dst[head..len]);
        }
    }

    /// Rows whose length is not a multiple of 8 (no model has such heads).
    #[cold]
    #[inline(never)]
    fn widen_tail(src: &[f16], dst: &mut [f32]) {
        for (wide, narrow) in dst.iter_mut().zip(src) {
            *wide = narrow.to_f32();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: KvElement>(values: &[f32], bits: &mut [T::Bits]) -> Vec<f32> {
        T::store(values, T::view_mut(bits));
        let mut scratch = vec![0.0; values.len()];
        let portable = T::load(T::view(bits), &mut scratch).to_vec();
        if let Some(features) = X86Features::detect() {
            let mut scratch = vec![0.0; values.len()];
            assert_eq!(T::load_x86(T::view(bits), &mut scratch, features), portable);
        }
        portable
    }

    #[test]
    fn rows_round_to_the_element_type_and_widen_back_exactly() {
        // 19 values: two SIMD chunks of 8 and a tail.
        let values: Vec<f32> = (0..19).map(|i| (i as f32 - 9.0) * 0.3712).collect();
        assert_eq!(round_trip::<f32>(&values, &mut [0.0; 19]), values);
        let halves = round_trip::<f16>(&values, &mut [0; 19]);
        let expected: Vec<f32> = values.iter().map(|&v| f16::from_f32(v).to_f32()).collect();
        assert_eq!(halves, expected);
        let brains = round_trip::<bf16>(&values, &mut [0; 19]);
        let expected: Vec<f32> = values.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
        assert_eq!(brains, expected);
        for (got, want) in brains.iter().zip(&values) {
            assert!((got - want).abs() <= want.abs() / 256.0, "{got} vs {want}");
        }
    }
}
