//! Activation rows quantized per group of 32 values, with one f32 scale per group
//! (`a ≈ scale · q`), at one of two precisions ([`ActivationBits`]):
//! - 8 bits, `scale = max |a| / 127`, as `Int8Matrix` quantizes weights: the form llama.cpp's
//!   Q8_1 gives its activations;
//! - 15 bits, `scale = max |a| / 16383`, held as two planes of int8 codes (`q = 128 · high +
//!   low`, `low` in 0..=127) that the same `vpdpbusd` multiplies: 128 times finer, two
//!   multiplies per 64 codes instead of one.
//!
//! Each group also keeps the sum of its codes (`q`), which the weights' offsets multiply.

use crate::models::int8::{quantize_group, GROUP_SIZE};

/// How finely activations are quantized per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivationBits {
    /// int8 codes, −127..=127 (llama.cpp's arithmetic).
    Eight,
    /// 15-bit codes, −16383..=16383, as a high and a low plane of int8 codes.
    Fifteen,
}

/// The largest 15-bit code.
const MAX_FINE_CODE: f32 = 16_383.0;

/// `m` activation rows of `cols` values as int8 codes (8 bits) or pairs of them (15 bits).
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedActivations {
    pub cols: usize,
    pub bits: ActivationBits,
    /// `m * cols` codes, row-major: the codes (8 bits) or their high part, `q >> 7` (15 bits).
    pub codes: Vec<i8>,
    /// 15 bits: `m * cols` low parts, `q & 127`; empty for 8 bits.
    pub low_codes: Vec<i8>,
    /// One per group, row-major: the group's scale.
    pub scales: Vec<f32>,
    /// One per group: the sum of the group's codes.
    pub code_sums: Vec<i32>,
}

impl QuantizedActivations {
    /// `x` is `[m, cols]` row-major, `cols` a multiple of 32; 8-bit codes.
    pub fn quantize(x: &[f32], cols: usize) -> Self {
        Self::quantize_to(x, cols, ActivationBits::Eight)
    }

    /// `x` is `[m, cols]` row-major, `cols` a multiple of 32.
    pub fn quantize_to(x: &[f32], cols: usize, bits: ActivationBits) -> Self {
        debug_assert!(cols.is_multiple_of(GROUP_SIZE) && x.len().is_multiple_of(cols.max(1)));
        let num_groups = x.len() / GROUP_SIZE;
        let mut quantized = Self {
            cols,
            bits,
            codes: Vec::with_capacity(x.len()),
            low_codes: Vec::with_capacity(if bits == ActivationBits::Fifteen { x.len() } else { 0 }),
            scales: Vec::with_capacity(num_groups),
            code_sums: Vec::with_capacity(num_groups),
        };
        let (groups, _) = x.as_chunks::<GROUP_SIZE>();
        for group in groups {
            let start = quantized.codes.len();
            match bits {
                ActivationBits::Eight => {
                    quantized.scales.push(quantize_group(group, &mut quantized.codes));
                    quantized.code_sums.push(quantized.codes[start..].iter().map(|&c| i32::from(c)).sum());
                }
                ActivationBits::Fifteen => quantized.push_fine_group(group),
            }
        }
        quantized
    }

    /// Appends one group's 15-bit codes, split into their planes, its scale and its code sum.
    fn push_fine_group(&mut self, group: &[f32; GROUP_SIZE]) {
        let max_abs = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = max_abs / MAX_FINE_CODE;
        let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
        let mut sum = 0i32;
        for v in group {
            let q = (v * inverse).round().clamp(-MAX_FINE_CODE, MAX_FINE_CODE) as i32;
            self.codes.push((q >> 7) as i8);
            self.low_codes.push((q & 127) as i8);
            sum += q;
        }
        self.scales.push(scale);
        self.code_sums.push(sum);
    }

    pub fn num_rows(&self) -> usize {
        self.codes.len() / self.cols.max(1)
    }

    /// Code `index` (row-major) as the integer it stands for.
    pub fn code(&self, index: usize) -> i32 {
        match self.bits {
            ActivationBits::Eight => i32::from(self.codes[index]),
            ActivationBits::Fifteen => 128 * i32::from(self.codes[index]) + i32::from(self.low_codes[index]),
        }
    }

    /// The f32 values the codes stand for, row-major (what the dense path multiplies, so that
    /// prefill and decode see the same activations).
    pub fn dequantize(&self) -> Vec<f32> {
        (0..self.codes.len()).map(|i| self.code(i) as f32 * self.scales[i / GROUP_SIZE]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_stay_within_half_a_step_and_sum_per_group() {
        let x: Vec<f32> = (0..128).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        for (bits, max_code) in [(ActivationBits::Eight, 127), (ActivationBits::Fifteen, 16_383)] {
            let q = QuantizedActivations::quantize_to(&x, 64, bits);
            assert_eq!(q.num_rows(), 2);
            assert_eq!(q.scales.len(), 4);
            let back = q.dequantize();
            for (g, group) in x.chunks(GROUP_SIZE).enumerate() {
                let step = q.scales[g];
                let max_abs = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                assert!((step * max_code as f32 - max_abs).abs() <= 1e-6 * max_abs, "{bits:?}");
                for (j, v) in group.iter().enumerate() {
                    assert!((back[g * GROUP_SIZE + j] - v).abs() <= step / 2.0 + 1e-6, "{bits:?}");
                }
                let codes: Vec<i32> = (g * GROUP_SIZE..(g + 1) * GROUP_SIZE).map(|i| q.code(i)).collect();
                assert_eq!(codes.iter().sum::<i32>(), q.code_sums[g], "{bits:?}");
                assert!(codes.iter().any(|&c| c.abs() == max_code), "{bits:?}: the largest value maps to ±{max_code}");
            }
        }
    }

    #[test]
    fn fifteen_bit_codes_split_into_a_signed_high_and_a_low_plane_below_128() {
        let x: Vec<f32> = (0..32).map(|i| (i as f32 - 16.5) * 3.0).collect();
        let q = QuantizedActivations::quantize_to(&x, 32, ActivationBits::Fifteen);
        assert_eq!(q.low_codes.len(), 32);
        assert!(q.low_codes.iter().all(|&low| (0..=127).contains(&low)));
        assert!(q.codes.iter().any(|&high| high < 0) && q.codes.iter().any(|&high| high > 0));
        assert_eq!(q.code(0), -16_383);
        assert!(QuantizedActivations::quantize(&x, 32).low_codes.is_empty());
    }

    #[test]
    fn a_group_of_zeros_has_zero_codes_and_scale() {
        for bits in [ActivationBits::Eight, ActivationBits::Fifteen] {
            let q = QuantizedActivations::quantize_to(&[0.0; 32], 32, bits);
            assert_eq!(q.scales, vec![0.0]);
            assert!(q.codes.iter().chain(&q.low_codes).all(|&c| c == 0));
            assert_eq!(q.dequantize(), vec![0.0; 32]);
        }
    }
}
