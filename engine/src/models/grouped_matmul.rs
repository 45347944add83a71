//! Several CPU-quantized matrices, each multiplied by its own activation rows, in one parallel
//! dispatch: a mixture-of-experts layer's chosen experts run as one set of tasks instead of one
//! fork/join per expert and projection (with 2 threads each fork/join wakes a sleeping worker,
//! ~400 times a token on a 16-layer top-8 model).

use rayon::prelude::*;

use super::int4::Int4Matrix;
use super::int8::{rows_per_task, untranspose, Int8Matrix, KernelKind};
use super::linear::Linear;

/// A projection's weights in a CPU-quantized format.
#[derive(Debug, Clone, Copy)]
pub enum QuantizedWeights<'a> {
    Int8(&'a Int8Matrix),
    Int4(&'a Int4Matrix),
}

impl<'a> QuantizedWeights<'a> {
    /// `linear`'s weights when they are CPU-quantized.
    pub fn of(linear: &'a Linear) -> Option<Self> {
        match linear {
            Linear::Int8(matrix) => Some(Self::Int8(matrix)),
            Linear::Int4(matrix) => Some(Self::Int4(matrix)),
            _ => None,
        }
    }

    pub fn rows(&self) -> usize {
        match self {
            Self::Int8(matrix) => matrix.rows(),
            Self::Int4(matrix) => matrix.rows(),
        }
    }

    pub fn cols(&self) -> usize {
        match self {
            Self::Int8(matrix) => matrix.cols(),
            Self::Int4(matrix) => matrix.cols(),
        }
    }

    fn rows_into(&self, kind: KernelKind, rows: (usize, usize), x: &[f32], m: usize, out: &mut [f32]) {
        match self {
            Self::Int8(matrix) => matrix.rows_into(kind, rows, x, m, out),
            Self::Int4(matrix) => matrix.rows_into(kind, rows, x, m, out),
        }
    }
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
    let mut tasks = Vec::new();
    for (product, out) in products.iter().zip(transposed.iter_mut()) {
        assert_eq!(product.x.len(), product.m * product.weights.cols(), "activation rows of the wrong width");
        if product.m == 0 {
            continue;
        }
        let rows = rows_per_task(product.weights.rows(), product.weights.cols(), usize::MAX);
        for (task, chunk) in out.chunks_mut(rows * product.m).enumerate() {
            tasks.push((product, task * rows, chunk));
        }
    }
    tasks.into_par_iter().for_each(|(product, first_row, out)| {
        let num_rows = out.len() / product.m;
        product.weights.rows_into(kind, (first_row, num_rows), product.x, product.m, out);
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
    }
}
