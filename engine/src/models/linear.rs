//! `Linear`: a projection `y = x · Wᵀ` in whichever weight format the model was loaded with.

use candle_core::quantized::QMatMul;
use candle_core::{Module, Tensor};

use super::int4::Int4Matrix;
use super::int8::{Int8Matrix, KernelKind, QuantizedRows};
use super::vnni::VnniMatrix;
use crate::error::{EngineError, Result};

#[derive(Debug, Clone)]
pub enum Linear {
    /// candle's kernels: dense tensors, or GGUF blocks (which also quantize the activations).
    Candle(QMatMul),
    /// int8 weights with f32 activations (CPU).
    Int8(Int8Matrix),
    /// A file's 4-bit blocks (Q4_0, Q4_1, Q4_K) as they are (CPU).
    Int4(Int4Matrix),
    /// 4-bit or 8-bit weights for AVX-512 VNNI, with 8-bit activations (CPU).
    Vnni(VnniMatrix),
    /// Projections of the same input that could not be merged into one matrix; their outputs
    /// are concatenated.
    Stacked(Vec<Linear>),
}

impl Linear {
    /// Merges projections of the same input (q/k/v, gate/up) into one, so that one kernel call
    /// reads all their weights. Output columns follow the order of `parts`.
    pub fn fuse(parts: Vec<Linear>) -> Result<Linear> {
        if let Some(int8) = all_as(&parts, |p| match p {
            Linear::Int8(m) => Some(m),
            _ => None,
        }) {
            return Int8Matrix::concat_rows(&int8)
                .map(Linear::Int8)
                .map_err(EngineError::model_load);
        }
        if let Some(int4) = all_as(&parts, |p| match p {
            Linear::Int4(m) => Some(m),
            _ => None,
        }) {
            return Int4Matrix::concat_rows(&int4)
                .map(Linear::Int4)
                .map_err(EngineError::model_load);
        }
        if let Some(vnni) = all_as(&parts, |p| match p {
            Linear::Vnni(m) => Some(m),
            _ => None,
        }) {
            if let Ok(fused) = VnniMatrix::concat_rows(&vnni) {
                return Ok(Linear::Vnni(fused));
            }
        }
        if let Some(dense) = all_as(&parts, |p| match p {
            Linear::Candle(QMatMul::Tensor(t)) => Some(t),
            _ => None,
        }) {
            let fused = Tensor::cat(&dense, 0)
                .map_err(|e| EngineError::model_load_from("cannot fuse projections", e))?;
            return Ok(Linear::Candle(QMatMul::Tensor(fused)));
        }
        Ok(Linear::Stacked(parts))
    }

    /// `x` is `[num_tokens, in]`; returns `[num_tokens, out]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Linear::Candle(matmul) => Ok(matmul.forward(x)?),
            Linear::Int8(matrix) => quantized_forward(
                x,
                matrix.rows(),
                || matrix.dequantize(),
                |input, m| matrix.matmul(input, m),
            ),
            Linear::Int4(matrix) => quantized_forward(
                x,
                matrix.rows(),
                || matrix.dequantize(),
                |input, m| matrix.matmul(input, m),
            ),
            Linear::Vnni(matrix) => {
                let (num_tokens, _) = x.dims2()?;
                let input = x.flatten_all()?.to_vec1::<f32>()?;
                let output = matrix.matmul(&input, num_tokens);
                Ok(Tensor::from_vec(output, (num_tokens, matrix.rows()), x.device())?)
            }
            Linear::Stacked(parts) => {
                let outputs = parts
                    .iter()
                    .map(|p| p.forward(x))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Tensor::cat(&outputs, 1)?)
            }
        }
    }
}

/// Every part as one kind (`pick` says which), or `None` when any part is another.
fn all_as<'a, T>(parts: &'a [Linear], pick: impl Fn(&'a Linear) -> Option<&'a T>) -> Option<Vec<&'a T>> {
    parts.iter().map(pick).collect()
}

/// `x · Wᵀ` for a CPU-quantized `W` of `rows` rows: its own kernels for a few rows (decode), or
/// for many (prefill) `W` unpacked to f32 once and the blocked dense matmul.
fn quantized_forward(
    x: &Tensor,
    rows: usize,
    dequantize: impl FnOnce() -> Vec<f32>,
    matmul: impl FnOnce(&[f32], usize) -> Vec<f32>,
) -> Result<Tensor> {
    let (num_tokens, cols) = x.dims2()?;
    if num_tokens >= KernelKind::detected().min_rows_for_dense_matmul() {
        let weights = Tensor::from_vec(dequantize(), (rows, cols), x.device())?;
        return Ok(x.matmul(&weights.t()?)?);
    }
    let input = x.flatten_all()?.to_vec1::<f32>()?;
    Ok(Tensor::from_vec(matmul(&input, num_tokens), (num_tokens, rows), x.device())?)
}

/// A projection with an optional bias: `y = x · Wᵀ + b`.
#[derive(Debug, Clone)]
pub struct Projection {
    weight: Linear,
    bias: Option<Tensor>,
}

impl Projection {
    pub fn new(weight: Linear, bias: Option<Tensor>) -> Self {
        Self { weight, bias }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = self.weight.forward(x)?;
        match &self.bias {
            Some(bias) => Ok(y.broadcast_add(bias)?),
            None => Ok(y),
        }
    }

    /// Fuses projections of the same input; a part without a bias contributes zeros.
    /// `out_dims` are the parts' output sizes.
    pub fn fuse(parts: Vec<Projection>, out_dims: &[usize]) -> Result<Projection> {
        let like = parts.iter().find_map(|p| p.bias.clone());
        let bias = if let Some(like) = like {
            let pieces = parts
                .iter()
                .zip(out_dims)
                .map(|(p, &dim)| match &p.bias {
                    Some(b) => Ok(b.clone()),
                    None => Tensor::zeros(dim, like.dtype(), like.device()),
                })
                .collect::<candle_core::Result<Vec<_>>>();
            let fused = pieces
                .and_then(|pieces| Tensor::cat(&pieces, 0))
                .map_err(|e| EngineError::model_load_from("cannot fuse biases", e))?;
            Some(fused)
        } else {
            None
        };
        let weight = Linear::fuse(parts.into_iter().map(|p| p.weight).collect())?;
        Ok(Projection { weight, bias })
    }
}
