//! CPU weights as int8 with one f32 scale per 32 values, multiplied with f32 activations.
//!
//! Weights are read once per step whatever the batch size (decode on CPU is memory-bound), and
//! activations stay f32, so results track an f32 model far more closely than kernels that also
//! quantize the activations. The kernel is chosen once at run time: a register-blocked AVX-512
//! micro-kernel (`int8/avx512.rs`, which the int4 format shares), the AVX2+FMA dot-product kernel
//! (`int8/avx2.rs`), or plain Rust for the autovectoriser (`int8/portable.rs`).

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod avx512_vector;
mod block;
mod portable;

#[cfg(target_arch = "x86_64")]
pub(super) use avx512::{dequantize_rows as dequantize_rows_avx512, rows_avx512, RegisterRows};
pub use block::GROUP_SIZE;
pub(super) use block::quantize_group;
use block::dequantize_into;
pub(super) use block::{QuantBlock, WeightRows};
pub(super) use portable::rows_portable;

/// Weights per parallel task (enough work to hide the scheduling cost).
const WEIGHTS_PER_TASK: usize = 1 << 16;

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
            scales.push(quantize_group(group, &mut quants));
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

    /// The values (row-major) and one scale per group.
    pub(super) fn groups(&self) -> (&[i8], &[f32]) {
        (&self.quants, &self.scales)
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

    /// Rows `first_row..first_row + num_rows` as the kernels read them.
    fn block(&self, first_row: usize, num_rows: usize) -> QuantBlock<'_> {
        let groups = self.cols / GROUP_SIZE;
        QuantBlock {
            quants: &self.quants[first_row * self.cols..(first_row + num_rows) * self.cols],
            scales: &self.scales[first_row * groups..(first_row + num_rows) * groups],
            cols: self.cols,
        }
    }

    /// Stacks matrices with the same columns into one (fused projections).
    pub fn concat_rows(parts: &[&Int8Matrix]) -> Result<Self, String> {
        Ok(Self {
            rows: parts.iter().map(|p| p.rows).sum(),
            cols: common_cols(parts.iter().map(|p| p.cols))?,
            quants: stacked(parts, |p| &p.quants),
            scales: stacked(parts, |p| &p.scales),
        })
    }

}

impl QuantizedRows for Int8Matrix {
    fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    fn rows_into(&self, kind: KernelKind, (first_row, num_rows): (usize, usize), x: &[f32], m: usize, out: &mut [f32]) {
        run_kernel(kind, self.block(first_row, num_rows), x, m, out)
    }
}

/// The one column count of matrices stacked into one (fused projections).
pub(super) fn common_cols(mut cols: impl Iterator<Item = usize>) -> Result<usize, String> {
    let first = cols.next().unwrap_or(0);
    if cols.any(|c| c != first) {
        return Err("cannot stack matrices with different column counts".into());
    }
    Ok(first)
}

/// One field of stacked matrices, part after part.
pub(super) fn stacked<M, T: Copy>(parts: &[&M], field: impl Fn(&M) -> &[T]) -> Vec<T> {
    parts.iter().flat_map(|p| field(p).iter().copied()).collect()
}

/// Quantized weight rows multiplied with f32 activations (the int4 and int8 formats): a format
/// gives its shape and how to fill any run of its rows' products, and gets the parallel matmul.
pub trait QuantizedRows: Sync {
    /// `(rows, cols)`.
    fn shape(&self) -> (usize, usize);

    /// Rows `first_row..first_row + num_rows` of `x · selfᵀ`, as `[num_rows, m]` into `out`, with
    /// kernel `kind` (which the CPU must run).
    fn rows_into(&self, kind: KernelKind, rows: (usize, usize), x: &[f32], m: usize, out: &mut [f32]);

    /// `x` is `[m, cols]` row-major; returns `x · selfᵀ` as `[m, rows]`.
    fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        self.matmul_with(KernelKind::detected(), x, m)
    }

    /// [`QuantizedRows::matmul`] with a given kernel, which the CPU must run
    /// ([`KernelKind::available`]).
    fn matmul_with(&self, kind: KernelKind, x: &[f32], m: usize) -> Vec<f32> {
        let (rows, cols) = self.shape();
        assert!(kind.runs_here(), "{kind:?} does not run on this CPU");
        debug_assert_eq!(x.len(), m * cols);
        run_row_tasks(rows, cols, m, |first_row, num_rows, out| {
            self.rows_into(kind, (first_row, num_rows), x, m, out)
        })
    }
}

/// Splits `rows` weight rows of `cols` into parallel tasks; `kernel(first_row, num_rows, out)`
/// fills `out` as `[num_rows, m]`. Returns the products as `[m, rows]`.
pub(super) fn run_row_tasks(
    rows: usize,
    cols: usize,
    m: usize,
    kernel: impl Fn(usize, usize, &mut [f32]) + Sync,
) -> Vec<f32> {
    let rows_per_task = rows_per_task(rows, cols, 2 * rayon::current_num_threads());
    let mut transposed = vec![0.0f32; rows * m];
    transposed
        .par_chunks_mut(rows_per_task * m.max(1))
        .enumerate()
        .for_each(|(task, out)| {
            kernel(task * rows_per_task, out.len() / m.max(1), out);
        });
    untranspose(transposed, rows, m)
}

/// Weight rows per parallel task over a `[rows, cols]` matrix: at least the weights of
/// WEIGHTS_PER_TASK, and no more than `max_tasks` tasks.
pub(super) fn rows_per_task(rows: usize, cols: usize, max_tasks: usize) -> usize {
    let min_rows = rows.div_ceil(max_tasks.max(1));
    (WEIGHTS_PER_TASK / cols.max(1)).max(min_rows).clamp(1, rows.max(1))
}

/// `[rows, m]` products as `[m, rows]`.
pub(super) fn untranspose(transposed: Vec<f32>, rows: usize, m: usize) -> Vec<f32> {
    if m == 1 {
        return transposed;
    }
    let mut out = vec![0.0f32; m * rows];
    for (row, column) in transposed.chunks_exact(m.max(1)).enumerate() {
        for (i, value) in column.iter().enumerate() {
            out[i * rows + row] = *value;
        }
    }
    out
}

fn run_kernel(kind: KernelKind, block: QuantBlock<'_>, x: &[f32], m: usize, out: &mut [f32]) {
    match kind {
        #[cfg(target_arch = "x86_64")]
        KernelKind::Avx512 if m == 1 => avx512_vector::rows_one_activation(block, x, out),
        KernelKind::Avx512 => avx512::rows_avx512(block, x, m, out),
        #[cfg(target_arch = "x86_64")]
        KernelKind::Avx2 => avx2::rows_avx2(block, x, m, out),
        KernelKind::Portable => portable::rows_portable(block, x, m, out),
    }
}

/// The vector code a CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl KernelKind {
    /// The widest kernel this CPU runs.
    pub fn detected() -> KernelKind {
        static KIND: std::sync::OnceLock<KernelKind> = std::sync::OnceLock::new();
        *KIND.get_or_init(|| Self::available()[0])
    }

    /// Every kernel this CPU runs, widest first.
    pub fn available() -> Vec<KernelKind> {
        let all = [
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx512,
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx2,
            KernelKind::Portable,
        ];
        all.into_iter().filter(|kind| kind.runs_here()).collect()
    }

    /// From this many activation rows on, unpacking the weights to f32 and calling the blocked
    /// dense matmul beats this kernel (measured on the default model's shapes, 2-core x86-64,
    /// `examples/int8_kernel_bench.rs`; see docs/PERFORMANCE.md).
    pub fn min_rows_for_dense_matmul(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx512 => 128,
            _ => 32,
        }
    }

    /// Whether this CPU has the instructions the kernel uses.
    pub fn runs_here(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx512 => avx512::available(),
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx2 => avx2::available(),
            KernelKind::Portable => true,
        }
    }
}

/// `x · wᵀ` the plain way (`w` is `[rows, cols]`, `x` `[m, cols]`): what the kernels' tests,
/// int4's too, compare against.
#[cfg(test)]
pub(super) fn naive_matmul(w: &[f32], x: &[f32], rows: usize, cols: usize, m: usize) -> Vec<f32> {
    let mut out = vec![0.0; m * rows];
    for i in 0..m {
        for r in 0..rows {
            out[i * rows + r] = (0..cols).map(|c| w[r * cols + c] * x[i * cols + c]).sum();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::naive_matmul as naive;
    use super::*;

    #[test]
    fn matches_naive_matmul_within_quantization_error() {
        let (rows, cols) = (37, 96);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0)
            .collect();
        let matrix = Int8Matrix::quantize(&w, rows, cols).expect("quantize");
        for kind in KernelKind::available() {
            for m in [1, 3, 5, 8, 11, 40] {
                let x: Vec<f32> = (0..m * cols)
                    .map(|i| ((i * 104_729 % 997) as f32 / 498.0) - 1.0)
                    .collect();
                let got = matrix.matmul_with(kind, &x, m);
                let want = naive(&w, &x, rows, cols, m);
                for (g, w) in got.iter().zip(&want) {
                    // Each weight is off by at most half a step (max/254); sum over 96 columns.
                    assert!((g - w).abs() < 0.2, "{kind:?} m={m}: {g} vs {w}");
                }
            }
        }
    }

    /// Every tile shape and edge: each kernel gives the dequantized weights' exact products
    /// (small integers multiply and add exactly in f32, whatever the order).
    #[test]
    fn every_kernel_exact_on_integer_data_at_every_edge() {
        for (rows, cols) in [(1, 32), (3, 64), (4, 96), (7, 32), (9, 160), (130, 64)] {
            let w: Vec<f32> = (0..rows * cols)
                .map(|i| ((i * 31 % 7) as f32 - 3.0) * 127.0 / 3.0)
                .collect();
            let matrix = Int8Matrix::quantize(&w, rows, cols).expect("quantize");
            let exact = matrix.dequantize();
            for m in [1, 2, 3, 4, 5, 7, 8, 9, 17, 70] {
                let x: Vec<f32> = (0..m * cols).map(|i| (i % 5) as f32 - 2.0).collect();
                let want = naive(&exact, &x, rows, cols, m);
                for kind in KernelKind::available() {
                    let got = matrix.matmul_with(kind, &x, m);
                    for (g, w) in got.iter().zip(&want) {
                        assert!((g - w).abs() <= 1e-3 * w.abs().max(1.0), "{kind:?} {rows}x{cols} m={m}: {g} vs {w}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_portable_kernel_is_always_available_and_last() {
        let kinds = KernelKind::available();
        assert_eq!(kinds.last(), Some(&KernelKind::Portable));
        assert_eq!(KernelKind::detected(), kinds[0]);
    }

    #[test]
    fn exact_for_values_on_the_grid() {
        let w: Vec<f32> = (0..64).map(|i| ((i % 3) as f32 - 1.0) * 127.0).collect();
        let matrix = Int8Matrix::quantize(&w, 2, 32).expect("quantize");
        let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
        for kind in KernelKind::available() {
            assert_eq!(matrix.matmul_with(kind, &x, 1), naive(&w, &x, 2, 32, 1), "{kind:?}");
        }
    }

    #[test]
    fn rejects_columns_not_in_groups() {
        assert!(Int8Matrix::quantize(&[0.0; 30], 1, 30).is_err());
    }
}
