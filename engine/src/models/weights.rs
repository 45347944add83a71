//! Where a model's weights come from. Llama-family layers ask for tensors by their GGUF names;
//! other formats (Hugging Face safetensors) implement the same trait and map the names.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::Tensor;

use super::gguf::GgufFile;

/// How projection weights are held in memory (CPU). Embeddings stay as the file has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// Dequantize to f32 at load: activations stay f32, so results match an f32 reference.
    #[default]
    F32,
    /// Repack to Q8_0 (SIMD kernels; activations are quantized to 8 bits in every matmul).
    Q8_0,
    /// Keep the file's own quantization (smallest; its kernels may be slow or scalar).
    Native,
}

impl WeightFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "f32" => Some(Self::F32),
            "q8_0" => Some(Self::Q8_0),
            "native" => Some(Self::Native),
            _ => None,
        }
    }

    /// Turns a weight into a matmul operand in this format.
    pub fn convert(self, tensor: QTensor) -> candle_core::Result<QMatMul> {
        let device = tensor.device();
        match self {
            Self::Native => QMatMul::from_arc(Arc::new(tensor)),
            Self::F32 => Ok(QMatMul::Tensor(tensor.dequantize(&device)?)),
            Self::Q8_0 if tensor.dtype() == GgmlDType::Q8_0 => QMatMul::from_arc(Arc::new(tensor)),
            Self::Q8_0 => {
                let dense = tensor.dequantize(&device)?;
                QMatMul::from_qtensor(QTensor::quantize(&dense, GgmlDType::Q8_0)?)
            }
        }
    }
}
use crate::error::{EngineError, Result};

/// A source of named weights of known shapes.
pub trait WeightSource {
    /// A `[out, in]` projection, kept quantized where the file is quantized.
    fn linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<QMatMul>;
    /// A 1-D f32 vector (norm weights).
    fn vector(&self, name: &str, len: usize) -> Result<Tensor>;
    /// A raw 2-D tensor (`[rows, cols]`), quantized or not: embeddings, tied output heads.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Arc<QTensor>>;
    fn contains(&self, name: &str) -> bool;
}

impl WeightSource for GgufFile {
    fn linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<QMatMul> {
        let tensor = self.tensor(name, &[out_dim, in_dim])?;
        let tensor = self
            .weight_format()
            .convert(tensor)
            .map_err(|e| EngineError::ModelLoad(format!("`{name}`: {e}")))?;
        Ok(tensor)
    }

    fn vector(&self, name: &str, len: usize) -> Result<Tensor> {
        let tensor = self.tensor(name, &[len])?;
        tensor
            .dequantize(&tensor.device())
            .map_err(|e| EngineError::ModelLoad(format!("`{name}`: {e}")))
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Arc<QTensor>> {
        Ok(Arc::new(self.tensor(name, &[rows, cols])?))
    }

    fn contains(&self, name: &str) -> bool {
        self.has_tensor(name)
    }
}
