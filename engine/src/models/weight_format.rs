//! `WeightFormat`: how projection weights are held in memory, and the conversion into it.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Tensor};

use super::int4::Int4Matrix;
use super::int8::{Int8Matrix, GROUP_SIZE};
use super::linear::Linear;
use super::vnni::VnniMatrix;

/// How projection weights are held in memory (CPU). Embedding lookups use the file's tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// `Int4` where this CPU runs the int4 rows on the AVX-512 tiles, else `Int8`: f32
    /// activations, so answers follow an f32 model (`Vnni` is faster and is chosen explicitly).
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
    /// `Int4`'s 4-bit blocks and `Int8`'s 8-bit weights interleaved for AVX-512 VNNI, with the
    /// activations quantized to int8 per 32 values (as llama.cpp runs Q4/Q8 blocks): the fastest
    /// CPU format at every row count, as far from f32 as llama.cpp is (near ties can flip, as
    /// they do in llama.cpp). Refused at start on a CPU without AVX-512 VNNI.
    Vnni,
}

impl WeightFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "int4" => Some(Self::Int4),
            "int8" => Some(Self::Int8),
            "f32" => Some(Self::F32),
            "native" => Some(Self::Native),
            "vnni" => Some(Self::Vnni),
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
            Self::Vnni => "vnni",
        }
    }

    /// What `self` is on this CPU: `Auto` made concrete (`Int4` or `Int8`), the others as they
    /// are.
    pub fn resolved(self) -> Self {
        match self {
            Self::Auto if Int4Matrix::fast_here() => Self::Int4,
            Self::Auto => Self::Int8,
            other => other,
        }
    }

    /// Why this CPU cannot hold weights in `self`, if it cannot.
    pub fn unsupported_here(self) -> Option<String> {
        (self == Self::Vnni && !VnniMatrix::fast_here()).then(|| {
            "--weight-format vnni needs a CPU with AVX-512 VNNI (avx512f, avx512bw, avx512vnni); \
             use auto, int4 or int8"
                .to_string()
        })
    }

    /// Turns a dense `[rows, cols]` weight into a projection in this format. On a GPU the
    /// weight is kept dense in the compute dtype `dtype` (the format applies to the CPU).
    pub fn convert_dense(self, tensor: Tensor, dtype: DType) -> candle_core::Result<Linear> {
        if !tensor.device().is_cpu() {
            return Ok(Linear::Candle(QMatMul::Tensor(tensor.to_dtype(dtype)?)));
        }
        let (rows, cols) = tensor.dims2()?;
        match self.resolved() {
            format @ (Self::Int4 | Self::Int8 | Self::Vnni) if cols % GROUP_SIZE == 0 => {
                let values = tensor.flatten_all()?.to_vec1::<f32>()?;
                let matrix =
                    Int8Matrix::quantize(&values, rows, cols).map_err(candle_core::Error::Msg)?;
                Ok(format.holding_int8(matrix))
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
        let format = self.resolved();
        match format {
            Self::Native => Ok(Linear::Candle(QMatMul::from_arc(tensor)?)),
            Self::Int4 | Self::Vnni if Int4Matrix::takes(tensor.dtype()) => {
                let (rows, cols) = tensor.shape().dims2()?;
                let matrix =
                    Int4Matrix::from_gguf_blocks(tensor.dtype(), &tensor.data()?, rows, cols)
                        .map_err(candle_core::Error::Msg)?;
                Ok(match format {
                    Self::Vnni => Linear::Vnni(VnniMatrix::from_int4(&matrix)),
                    _ => Linear::Int4(matrix),
                })
            }
            Self::Int4 | Self::Int8 | Self::Vnni if cols % GROUP_SIZE == 0 => {
                let dense = tensor.dequantize(&device)?;
                let (rows, cols) = dense.dims2()?;
                let values = dense.flatten_all()?.to_vec1::<f32>()?;
                let matrix =
                    Int8Matrix::quantize(&values, rows, cols).map_err(candle_core::Error::Msg)?;
                Ok(format.holding_int8(matrix))
            }
            _ => Ok(Linear::Candle(QMatMul::Tensor(tensor.dequantize(&device)?))),
        }
    }

    /// An int8 matrix as this (resolved) format holds it.
    fn holding_int8(self, matrix: Int8Matrix) -> Linear {
        match self {
            Self::Vnni => Linear::Vnni(VnniMatrix::from_int8(&matrix)),
            _ => Linear::Int8(matrix),
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
