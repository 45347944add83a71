//! Several CPU-quantized matrices, each multiplied by its own activation rows, in one parallel
//! dispatch: a mixture-of-experts layer's chosen experts run as one set of tasks instead of one
//! fork/join per expert and projection (with 2 threads each fork/join wakes a sleeping worker,
//! ~400 times a token on a 16-layer top-8 model).

use rayon::prelude::*;

use super::int4::Int4Matrix;
use super::int8::{rows_per_task, untranspose, Int8Matrix, KernelKind, QuantizedRows};
use super::linear::Linear;
use super::vnni::{QuantizedActivations, VnniMatrix};

/// A projection's weights in a CPU-quantized format.
#[derive(Debug, Clone, Copy)]
pub enum QuantizedWeights<'a> {
    Int8(&'a Int8Matrix),
    Int4(&'a Int4Matrix),
    Vnni(&'a VnniMatrix),
}

impl<'a> QuantizedWeights<'a> {
    /// `linear`'s weights when they are CPU-quantized.
    pub fn of(linear: &'a Linear) -> Option<Self> {
        match linear {
            Linear::Int8(matrix) => Some(Self::Int8(matrix)),
            Linear::Int4(matrix) => Some(Self::Int4(matrix)),
            Linear::Vnni(matrix) => Some(Self::Vnni(matrix)),
            _ => None,
        }
    }

    pub fn rows(&self) -> usize {
        match self {
            Self::Int8(matrix) => matrix.rows(),
            Self::Int4(matrix) => matrix.rows(),
            Self::Vnni(matrix) => matrix.rows(),
        }
    }

    pub fn cols(&self) -> usize {
        match self {
            Self::Int8(matrix) => matrix.cols(),
            Self::Int4(matrix) => matrix.cols(),
            Self::Vnni(matrix) => matrix.cols(),
        }
    }

    /// VNNI weights' activations `x` quantized as those weights multiply them (`None` for the
    /// others, which multiply f32 activations).
    fn quantize_activations(&self, x: &[f32]) -> Option<QuantizedActivations> {
        match self {
            Self::Vnni(matrix) => Some(QuantizedActivations::quantize_to(x, matrix.cols(), matrix.activation_bits())),
            _ => None,
        }
    }

    /// Weight rows per parallel task (whole 16-row blocks for VNNI weights).
    fn rows_per_task(&self) -> usize {
        let rows = rows_per_task(self.rows(), self.cols(), usize::MAX);
        match self {
            Self::Vnni(_) => rows.next_multiple_of(VnniMatrix::BLOCK_ROWS),
            _ => rows,
        }
    }

    /// Rows `first_row..first_row + num_rows` of `x · selfᵀ` as `[num_rows, m]`; VNNI weights
    /// read `x` as `quantized`.
    fn rows_into(&self, kind: KernelKind, rows: (usize, usize), x: &Input<'_>, out: &mut [f32]) {
        match (self, &x.quantized) {
            (Self::Int8(matrix), _) => matrix.rows_into(kind, rows, x.values, x.m, out),
            (Self::Int4(matrix), _) => matrix.rows_into(kind, rows, x.values, x.m, out),
            (Self::Vnni(matrix), Some(quantized)) => matrix.rows_transposed_into(rows, quantized, out),
            (Self::Vnni(_), None) => unreachable!("VNNI products get quantized activations"),
        }
    }
}

/// A product's activations: f32, and for VNNI weights also quantized (once per product).
struct Input<'a> {
    values: &'a [f32],
    m: usize,
    quantized: Option<QuantizedActivations>,
}

/// One product of a group: `x` (`[m, weights.cols()]`, row-major) times `weightsᵀ`.
#[derive(Debug, Clone, Copy)]
pub struct Product<'a> {
    pub weights: QuantizedWeights<'a>,
    pub x: &'a [f32],
    pub m: usize,
}

/// Every product's `x · Wᵀ` (`[m, rows]` each), computed by one parallel pass over all their
/// weight rows, with the kernels [`Int8Matrix::matmul`] and [`Int4Matrix::matmul`] use.
pub fn grouped_matmul(products: &[Product<'_>]) -> Vec<Vec<f32>> {
    let kind = KernelKind::detected();
    let mut transposed: Vec<Vec<f32>> = products
        .iter()
        .map(|p| vec![0.0f32; p.weights.rows() * p.m])
        .collect();
    let inputs: Vec<Input<'_>> = products
        .iter()
        .map(|p| Input {
            values: p.x,
            m: p.m,
            quantized: p.weights.quantize_activations(p.x),
        })
        .collect();
    let mut tasks = Vec::new();
    for ((product, input), out) in products.iter().zip(&inputs).zip(transposed.iter_mut()) {
        assert_eq!(product.x.len(), product.m * product.weights.cols(), "activation rows of the wrong width");
        if product.m == 0 {
            continue;
        }
        let rows = product.weights.rows_per_task();
        for (task, chunk) in out.chunks_mut(rows * product.m).enumerate() {
            tasks.push((product, input, task * rows, chunk));
        }
    }
    tasks.into_par_iter().for_each(|(product, input, first_row, out)| {
        let num_rows = out.len() / product.m;
        product.weights.rows_into(kind, (first_row, num_rows), input, out);
    });
    products
        .iter()
        .zip(transposed)
        .map(|(p, t)| untranspose(t, p.weights.rows(), p.m))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::vnni::ActivationBits;

    fn matrix(rows: usize, cols: usize, seed: usize) -> Int8Matrix {
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| (((i + seed) * 7919 % 1000) as f32 / 500.0) - 1.0)
            .collect();
        Int8Matrix::quantize(&values, rows, cols).expect("quantize")
    }

    #[test]
    fn every_product_equals_its_own_matmul() {
        let matrices = [matrix(96, 64, 1), matrix(5, 64, 2), matrix(300, 32, 3)];
        let inputs: Vec<(Vec<f32>, usize)> = [(1usize, 64usize), (3, 64), (0, 32), (7, 32)]
            .iter()
            .map(|&(m, cols)| ((0..m * cols).map(|i| (i % 13) as f32 * 0.1 - 0.6).collect(), m))
            .collect();
        let weights = [&matrices[0], &matrices[1], &matrices[2], &matrices[2]];
        let products: Vec<Product<'_>> = weights
            .iter()
            .zip(&inputs)
            .map(|(w, (x, m))| Product { weights: QuantizedWeights::Int8(w), x, m: *m })
            .collect();
        let got = grouped_matmul(&products);
        for ((w, (x, m)), got) in weights.iter().zip(&inputs).zip(&got) {
            assert_eq!(got.len(), m * w.rows());
            assert_eq!(*got, w.matmul(x, *m), "{}x{} with {m} rows", w.rows(), w.cols());
        }
        let packed: Vec<VnniMatrix> = weights.iter().map(|w| VnniMatrix::from_int8(w, ActivationBits::Eight)).collect();
        let products: Vec<Product<'_>> = packed
            .iter()
            .zip(&inputs)
            .map(|(w, (x, m))| Product { weights: QuantizedWeights::Vnni(w), x, m: *m })
            .collect();
        for ((w, (x, m)), got) in packed.iter().zip(&inputs).zip(&grouped_matmul(&products)) {
            assert_eq!(*got, w.matmul(x, *m), "VNNI {}x{} with {m} rows", w.rows(), w.cols());
        }
    }
}
