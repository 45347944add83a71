//! `WeightFormat`: how projection weights are held in memory, and the conversion into it.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Tensor};

use super::int4::Int4Matrix;
use super::int8::{Int8Matrix, GROUP_SIZE};
use super::linear::Linear;

/// How projection weights are held in memory (CPU). Embedding lookups use the file's tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// `Int4` where this CPU runs the int4 rows on the AVX-512 tiles, else `Int8`.
    #[default]
    Auto,
    /// A file's 4-bit blocks (Q4_0, Q4_1, Q4_K) exactly as they are, with one f32 scale and offset
    /// per 32 values; every other type as `Int8`.
    Int4,
    /// int8 with one f32 scale per 32 values; activations stay f32. Fast and close to f32.
    Int8,
    /// Dequantize to f32 at load: exact, four times the memory, slower decode.
    F32,
    /// Keep the file's own blocks and candle's kernels, which quantize activations to 8 bits.
    Native,
}

impl WeightFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "int4" => Some(Self::Int4),
            "int8" => Some(Self::Int8),
            "f32" => Some(Self::F32),
            "native" => Some(Self::Native),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Int4 => "int4",
            Self::Int8 => "int8",
            Self::F32 => "f32",
            Self::Native => "native",
        }
    }

    /// Turns a dense `[rows, cols]` weight into a projection in this format. On a GPU the
    /// weight is kept dense in the compute dtype `dtype` (the format applies to the CPU).
    pub fn convert_dense(self, tensor: Tensor, dtype: DType) -> candle_core::Result<Linear> {
        if !tensor.device().is_cpu() {
            return Ok(Linear::Candle(QMatMul::Tensor(tensor.to_dtype(dtype)?)));
        }
        let (rows, cols) = tensor.dims2()?;
        match self {
            Self::Auto | Self::Int4 | Self::Int8 if cols % GROUP_SIZE == 0 => {
                let values = tensor.flatten_all()?.to_vec1::<f32>()?;
                Int8Matrix::quantize(&values, rows, cols)
                    .map(Linear::Int8)
                    .map_err(candle_core::Error::Msg)
            }
            _ => Ok(Linear::Candle(QMatMul::Tensor(tensor))),
        }
    }

    /// Turns a `[rows, cols]` weight into a projection in this format. On a GPU, GGUF blocks
    /// that candle's GPU kernels multiply directly stay quantized; others are dequantized to
    /// `dtype` at load.
    pub fn convert(self, tensor: Arc<QTensor>, dtype: DType) -> candle_core::Result<Linear> {
        let device = tensor.device();
        if !device.is_cpu() {
            if GPU_QUANTIZED.contains(&tensor.dtype()) {
                return Ok(Linear::Candle(QMatMul::from_arc(tensor)?));
            }
            let dense = tensor.dequantize(&device)?.to_dtype(dtype)?;
            return Ok(Linear::Candle(QMatMul::Tensor(dense)));
        }
        let cols = tensor.shape().dims().last().copied().unwrap_or(0);
        let keep_4_bit = match self {
            Self::Auto => Int4Matrix::fast_here(),
            Self::Int4 => true,
            _ => false,
        };
        match self {
            Self::Native => Ok(Linear::Candle(QMatMul::from_arc(tensor)?)),
            _ if keep_4_bit && Int4Matrix::takes(tensor.dtype()) => {
                let (rows, cols) = tensor.shape().dims2()?;
                Int4Matrix::from_gguf_blocks(tensor.dtype(), &tensor.data()?, rows, cols)
                    .map(Linear::Int4)
                    .map_err(candle_core::Error::Msg)
            }
            Self::Auto | Self::Int4 | Self::Int8 if cols % GROUP_SIZE == 0 => {
                let dense = tensor.dequantize(&device)?;
                let (rows, cols) = dense.dims2()?;
                let values = dense.flatten_all()?.to_vec1::<f32>()?;
                Int8Matrix::quantize(&values, rows, cols)
                    .map(Linear::Int8)
                    .map_err(candle_core::Error::Msg)
            }
            Self::F32 | Self::Auto | Self::Int4 | Self::Int8 => {
                Ok(Linear::Candle(QMatMul::Tensor(tensor.dequantize(&device)?)))
            }
        }
    }
}

/// GGUF block types candle's CUDA kernels multiply without dequantizing (its MMVQ/MMQ paths,
/// which take f32, f16 and bf16 activations).
pub const GPU_QUANTIZED: &[GgmlDType] = &[
    GgmlDType::Q4_0,
    GgmlDType::Q4_1,
    GgmlDType::Q5_0,
    GgmlDType::Q5_1,
    GgmlDType::Q8_0,
    GgmlDType::Q2K,
    GgmlDType::Q3K,
    GgmlDType::Q4K,
    GgmlDType::Q5K,
    GgmlDType::Q6K,
];
