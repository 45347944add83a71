//! Activation rows quantized to int8 per group of 32 values, with one f32 scale per group
//! (`a ≈ scale · q`, `scale = max |a| / 127`, as `Int8Matrix` quantizes weights), the form
//! llama.cpp's Q8_1 gives its activations.
//! Each group also keeps the sum of its codes, which the weights' offsets multiply.

use crate::models::int8::{quantize_group, GROUP_SIZE};

/// `m` activation rows of `cols` values as int8 codes.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedActivations {
    pub cols: usize,
    /// `m * cols` codes, row-major.
    pub codes: Vec<i8>,
    /// One per group, row-major: the group's scale.
    pub scales: Vec<f32>,
    /// One per group: the sum of the group's codes.
    pub code_sums: Vec<i32>,
}

impl QuantizedActivations {
    /// `x` is `[m, cols]` row-major, `cols` a multiple of 32.
    pub fn quantize(x: &[f32], cols: usize) -> Self {
        debug_assert!(cols.is_multiple_of(GROUP_SIZE) && x.len().is_multiple_of(cols.max(1)));
        let num_groups = x.len() / GROUP_SIZE;
        let mut quantized = Self {
            cols,
            codes: Vec::with_capacity(x.len()),
            scales: Vec::with_capacity(num_groups),
            code_sums: Vec::with_capacity(num_groups),
        };
        let (groups, _) = x.as_chunks::<GROUP_SIZE>();
        for group in groups {
            let start = quantized.codes.len();
            quantized.scales.push(quantize_group(group, &mut quantized.codes));
            quantized.code_sums.push(quantized.codes[start..].iter().map(|&c| i32::from(c)).sum());
        }
        quantized
    }

    pub fn num_rows(&self) -> usize {
        self.codes.len() / self.cols.max(1)
    }

    /// The f32 values the codes stand for, row-major (what the dense path multiplies, so that
    /// prefill and decode see the same activations).
    pub fn dequantize(&self) -> Vec<f32> {
        let (groups, _) = self.codes.as_chunks::<GROUP_SIZE>();
        groups
            .iter()
            .zip(&self.scales)
            .flat_map(|(codes, &scale)| codes.iter().map(move |&c| f32::from(c) * scale))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_stay_within_half_a_step_and_sum_per_group() {
        let x: Vec<f32> = (0..128).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        let q = QuantizedActivations::quantize(&x, 64);
        assert_eq!(q.num_rows(), 2);
        assert_eq!(q.scales.len(), 4);
        let back = q.dequantize();
        for (g, group) in x.chunks(GROUP_SIZE).enumerate() {
            let step = q.scales[g];
            for (j, v) in group.iter().enumerate() {
                assert!((back[g * GROUP_SIZE + j] - v).abs() <= step / 2.0 + 1e-6);
            }
            let codes = &q.codes[g * GROUP_SIZE..(g + 1) * GROUP_SIZE];
            assert_eq!(codes.iter().map(|&c| i32::from(c)).sum::<i32>(), q.code_sums[g]);
            assert!(codes.iter().any(|&c| c.abs() == 127), "the largest value maps to ±127");
        }
    }

    #[test]
    fn a_group_of_zeros_has_zero_codes_and_scale() {
        let q = QuantizedActivations::quantize(&[0.0; 32], 32);
        assert_eq!(q.scales, vec![0.0]);
        assert!(q.codes.iter().all(|&c| c == 0));
        assert_eq!(q.dequantize(), vec![0.0; 32]);
    }
}
