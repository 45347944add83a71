//! The int8 kernel in plain Rust, for CPUs without the vector extensions the other kernels use.

use super::block::{WeightRows, GROUP_SIZE};

/// Activation rows processed together (their accumulators stay in registers).
const ACTIVATION_ROWS_PER_PASS: usize = 8;

/// `out[r * m + i] = dot(weights row r, x row i)` for every row of `weights`.
pub fn rows_portable(weights: impl WeightRows, x: &[f32], m: usize, out: &mut [f32]) {
    let cols = weights.cols();
    let mut dequantized = vec![0.0f32; cols];
    for r in 0..weights.num_rows() {
        weights.dequantize_rows(r, 1, &mut dequantized);
        let mut start = 0;
        while start < m {
            let count = (m - start).min(ACTIVATION_ROWS_PER_PASS);
            let sums = dot_many(&dequantized, &x[start * cols..(start + count) * cols], count);
            out[r * m + start..r * m + start + count].copy_from_slice(&sums[..count]);
            start += count;
        }
    }
}

/// Dot products of one weight row with up to 8 activation rows. 32 lanes per row keep four
/// independent vector accumulators busy.
#[inline(always)]
fn dot_many(weights: &[f32], xs: &[f32], count: usize) -> [f32; ACTIVATION_ROWS_PER_PASS] {
    let cols = weights.len();
    let mut sums = [0.0f32; ACTIVATION_ROWS_PER_PASS];
    for (i, sum) in sums.iter_mut().enumerate().take(count) {
        let (x, _) = xs[i * cols..(i + 1) * cols].as_chunks::<GROUP_SIZE>();
        let (w, _) = weights.as_chunks::<GROUP_SIZE>();
        let mut lanes = [0.0f32; GROUP_SIZE];
        for (w, x) in w.iter().zip(x) {
            for lane in 0..GROUP_SIZE {
                lanes[lane] += w[lane] * x[lane];
            }
        }
        *sum = lanes.iter().sum();
    }
    sums
}
