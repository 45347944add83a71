//! CPU weights as int8 with one f32 scale per 32 values, multiplied with f32 activations.
//!
//! Weights are read once per step whatever the batch size (decode on CPU is memory-bound), and
//! activations stay f32, so results track an f32 model far more closely than kernels that also
//! quantize the activations. The inner loops are plain Rust written for the autovectoriser; on
//! x86-64 a copy compiled for AVX2+FMA is chosen at run time.

use rayon::prelude::*;

/// Values per scale.
pub const GROUP_SIZE: usize = 32;
/// Weights per parallel task (enough work to hide the scheduling cost).
const WEIGHTS_PER_TASK: usize = 1 << 16;
/// Activation rows processed together (their accumulators stay in registers).
const ACTIVATION_ROWS_PER_PASS: usize = 8;

/// A `[rows, cols]` weight matrix, row-major, quantized per group of 32 columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Int8Matrix {
    rows: usize,
    cols: usize,
    quants: Vec<i8>,
    scales: Vec<f32>,
}

impl Int8Matrix {
    /// Quantizes a row-major f32 matrix; `cols` must be a multiple of 32.
    pub fn quantize(values: &[f32], rows: usize, cols: usize) -> Result<Self, String> {
        if !cols.is_multiple_of(GROUP_SIZE) || values.len() != rows * cols {
            return Err(format!("cannot quantize a {rows}x{cols} matrix from {} values to int8 groups of {GROUP_SIZE}", values.len()));
        }
        let mut quants = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(values.len() / GROUP_SIZE);
        for group in values.chunks_exact(GROUP_SIZE) {
            let max_abs = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = max_abs / 127.0;
            let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            quants.extend(
                group
                    .iter()
                    .map(|v| (v * inverse).round().clamp(-127.0, 127.0) as i8),
            );
            scales.push(scale);
        }
        Ok(Self {
            rows,
            cols,
            quants,
            scales,
        })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The f32 values the int8 ones stand for, row-major.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut values = vec![0.0f32; self.rows * self.cols];
        values
            .par_chunks_mut(self.cols.max(1) * 64)
            .zip(self.quants.par_chunks(self.cols.max(1) * 64))
            .zip(self.scales.par_chunks((self.cols / GROUP_SIZE).max(1) * 64))
            .for_each(|((out, quants), scales)| dequantize_into(quants, scales, out));
        values
    }

    /// Stacks matrices with the same columns into one (fused projections).
    pub fn concat_rows(parts: &[&Int8Matrix]) -> Result<Self, String> {
        let cols = parts.first().map_or(0, |p| p.cols);
        if parts.iter().any(|p| p.cols != cols) {
            return Err("cannot stack matrices with different column counts".into());
        }
        Ok(Self {
            rows: parts.iter().map(|p| p.rows).sum(),
            cols,
            quants: parts
                .iter()
                .flat_map(|p| p.quants.iter().copied())
                .collect(),
            scales: parts
                .iter()
                .flat_map(|p| p.scales.iter().copied())
                .collect(),
        })
    }

    /// `x` is `[m, cols]` row-major; returns `x · selfᵀ` as `[m, rows]`.
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        debug_assert_eq!(x.len(), m * self.cols);
        // At least the weights of WEIGHTS_PER_TASK per task, and no more than two tasks per thread.
        let min_rows = self.rows.div_ceil(2 * rayon::current_num_threads());
        let rows_per_task = (WEIGHTS_PER_TASK / self.cols.max(1))
            .max(min_rows)
            .clamp(1, self.rows.max(1));
        let mut transposed = vec![0.0f32; self.rows * m];
        transposed
            .par_chunks_mut(rows_per_task * m.max(1))
            .enumerate()
            .for_each(|(task, out)| {
                let first_row = task * rows_per_task;
                let num_rows = out.len() / m.max(1);
                kernel(self, x, m, first_row, num_rows, out);
            });
        let mut out = vec![0.0f32; m * self.rows];
        for (row, column) in transposed.chunks_exact(m.max(1)).enumerate() {
            for (i, value) in column.iter().enumerate() {
                out[i * self.rows + row] = *value;
            }
        }
        out
    }
}

/// Picks the widest vector code the CPU runs.
fn kernel(w: &Int8Matrix, x: &[f32], m: usize, first_row: usize, num_rows: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            simd::rows_avx2(w, x, m, first_row, num_rows, out);
            return;
        }
    }
    rows_portable(w, x, m, first_row, num_rows, out);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod simd {
    //! AVX2+FMA versions of the two inner loops (the autovectoriser leaves them scalar).
    use std::arch::x86_64::*;

    use super::{Int8Matrix, GROUP_SIZE};

    /// Activation rows per pass: 3 rows × 4 accumulators leave registers for the weights.
    const ROWS_PER_PASS: usize = 3;

    pub(super) fn rows_avx2(
        w: &Int8Matrix,
        x: &[f32],
        m: usize,
        first_row: usize,
        num_rows: usize,
        out: &mut [f32],
    ) {
        let num_groups = w.cols / GROUP_SIZE;
        for r in 0..num_rows {
            let row = first_row + r;
            let quants = &w.quants[row * w.cols..(row + 1) * w.cols];
            let scales = &w.scales[row * num_groups..(row + 1) * num_groups];
            let mut start = 0;
            while start < m {
                let count = (m - start).min(ROWS_PER_PASS);
                let xs = &x[start * w.cols..(start + count) * w.cols];
                // SAFETY: `kernel` checked at run time that the CPU has AVX2 and FMA; `quants`
                // holds whole groups (cols is a multiple of 32, checked in `quantize`) and `xs`
                // holds `count` rows of `cols` values.
                let sums = unsafe { dot_rows(quants, scales, xs, count) };
                out[r * m + start..r * m + start + count].copy_from_slice(&sums[..count]);
                start += count;
            }
        }
    }

    /// Dot products of one int8 weight row with `count` (≤ 3) f32 rows, dequantizing on the fly.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_rows(
        quants: &[i8],
        scales: &[f32],
        xs: &[f32],
        count: usize,
    ) -> [f32; ROWS_PER_PASS] {
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
}

/// Computes `out[r * m + i] = dot(w[first_row + r], x[i])` for `num_rows` weight rows.
fn rows_portable(
    w: &Int8Matrix,
    x: &[f32],
    m: usize,
    first_row: usize,
    num_rows: usize,
    out: &mut [f32],
) {
    let num_groups = w.cols / GROUP_SIZE;
    let mut dequantized = vec![0.0f32; w.cols];
    for r in 0..num_rows {
        let row = first_row + r;
        let quants = &w.quants[row * w.cols..(row + 1) * w.cols];
        let scales = &w.scales[row * num_groups..(row + 1) * num_groups];
        dequantize_into(quants, scales, &mut dequantized);
        let mut start = 0;
        while start < m {
            let count = (m - start).min(ACTIVATION_ROWS_PER_PASS);
            let sums = dot_many(
                &dequantized,
                &x[start * w.cols..(start + count) * w.cols],
                count,
            );
            out[r * m + start..r * m + start + count].copy_from_slice(&sums[..count]);
            start += count;
        }
    }
}

#[inline(always)]
fn dequantize_into(quants: &[i8], scales: &[f32], out: &mut [f32]) {
    let (out, _) = out.as_chunks_mut::<GROUP_SIZE>();
    let (quants, _) = quants.as_chunks::<GROUP_SIZE>();
    for ((out, quants), &scale) in out.iter_mut().zip(quants).zip(scales) {
        for lane in 0..GROUP_SIZE {
            out[lane] = quants[lane] as f32 * scale;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(w: &[f32], x: &[f32], rows: usize, cols: usize, m: usize) -> Vec<f32> {
        let mut out = vec![0.0; m * rows];
        for i in 0..m {
            for r in 0..rows {
                out[i * rows + r] = (0..cols).map(|c| w[r * cols + c] * x[i * cols + c]).sum();
            }
        }
        out
    }

    #[test]
    fn matches_naive_matmul_within_quantization_error() {
        let (rows, cols) = (37, 96);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0)
            .collect();
        let matrix = Int8Matrix::quantize(&w, rows, cols).expect("quantize");
        for m in [1, 3, 8, 11, 40] {
            let x: Vec<f32> = (0..m * cols)
                .map(|i| ((i * 104_729 % 997) as f32 / 498.0) - 1.0)
                .collect();
            let got = matrix.matmul(&x, m);
            let want = naive(&w, &x, rows, cols, m);
            for (g, w) in got.iter().zip(&want) {
                // Each weight is off by at most half a step (max/254); sum over 96 columns.
                assert!((g - w).abs() < 0.2, "m={m}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn exact_for_values_on_the_grid() {
        let w: Vec<f32> = (0..64).map(|i| ((i % 3) as f32 - 1.0) * 127.0).collect();
        let matrix = Int8Matrix::quantize(&w, 2, 32).expect("quantize");
        let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let got = matrix.matmul(&x, 1);
        assert_eq!(got, naive(&w, &x, 2, 32, 1));
    }

    #[test]
    fn rejects_columns_not_in_groups() {
        assert!(Int8Matrix::quantize(&[0.0; 30], 1, 30).is_err());
    }
}
