//! Where a model's weights come from. Llama-family layers ask for tensors by their GGUF names;
//! other formats (Hugging Face safetensors) implement the same trait and map the names.

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Tensor};

use super::gguf::GgufFile;
use super::linear::Linear;
use super::weight_format::WeightFormat;
use crate::error::{EngineError, Result};

/// A source of named weights of known shapes.
pub trait WeightSource {
    /// A `[out, in]` projection, kept quantized where the file is quantized.
    fn linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Linear>;
    /// A `[out, in]` projection kept in the compute dtype whatever the weight format (a MoE
    /// router: quantizing it would move tokens to other experts).
    fn dense_linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Linear> {
        let matrix = self.matrix(name, out_dim, in_dim)?;
        let dense = matrix
            .dequantize(&matrix.device())
            .and_then(|t| t.to_dtype(self.dtype()))
            .map_err(|e| EngineError::model_load_from(format_args!("cannot read `{name}`"), e))?;
        Ok(Linear::Candle(QMatMul::Tensor(dense)))
    }
    /// A 1-D f32 vector (norm weights).
    fn vector(&self, name: &str, len: usize) -> Result<Tensor>;
    /// A raw 2-D tensor (`[rows, cols]`), quantized or not: embeddings, tied output heads.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Arc<QTensor>>;
    fn contains(&self, name: &str) -> bool;
    /// The `num_experts` `[out, in]` projections of a stacked expert weight
    /// (`blk.N.ffn_{gate,up,down}_exps.weight`). Sources that store experts apart (Hugging Face
    /// checkpoints) read `blk.N.ffn_*_exps.{expert}.weight` one by one.
    fn experts(
        &self,
        name: &str,
        num_experts: usize,
        out_dim: usize,
        in_dim: usize,
    ) -> Result<Vec<Linear>> {
        per_expert_linears(self, name, num_experts, (out_dim, in_dim))
    }
    /// The `[num_experts, len]` biases of a stacked expert projection
    /// (`blk.N.ffn_{gate,up,down}_exps.bias`, gpt-oss), in the compute dtype.
    fn expert_biases(&self, name: &str, num_experts: usize, len: usize) -> Result<Tensor> {
        per_expert_biases(self, name, num_experts, len)
    }
    /// Whether the output head is the token embedding (no `output.weight` of its own).
    fn ties_embeddings(&self) -> bool {
        !self.contains("output.weight")
    }
    /// The format projections are converted to.
    fn weight_format(&self) -> WeightFormat;
    /// The dtype the model computes in: dense weights and vectors come in it.
    fn dtype(&self) -> DType {
        DType::F32
    }
    /// The token embedding (`[vocab, hidden]`) and, for a tied model, the output head made of it.
    fn embedding_and_tied_head(
        &self,
        vocab_size: usize,
        hidden_size: usize,
    ) -> Result<(QMatMul, Option<Linear>)> {
        file_embedding_and_tied_head(self, vocab_size, hidden_size)
    }
}

/// The experts of a stacked GGUF name read one by one (`blk.N.ffn_*_exps.{expert}.weight`).
pub fn per_expert_linears<S: WeightSource + ?Sized>(
    source: &S,
    name: &str,
    num_experts: usize,
    (out_dim, in_dim): (usize, usize),
) -> Result<Vec<Linear>> {
    let stem = name.strip_suffix(".weight").unwrap_or(name);
    (0..num_experts)
        .map(|e| source.linear(&format!("{stem}.{e}.weight"), out_dim, in_dim))
        .collect()
}

/// The experts' biases of a stacked GGUF name read one by one, stacked `[num_experts, len]`.
pub fn per_expert_biases<S: WeightSource + ?Sized>(
    source: &S,
    name: &str,
    num_experts: usize,
    len: usize,
) -> Result<Tensor> {
    let stem = name.strip_suffix(".bias").unwrap_or(name);
    let rows = (0..num_experts)
        .map(|e| source.vector(&format!("{stem}.{e}.bias"), len))
        .collect::<Result<Vec<_>>>()?;
    Ok(Tensor::stack(&rows, 0)?)
}

/// A dense embedding table (in the compute dtype) and, when `tied`, an output head sharing it.
pub fn dense_embedding_and_tied_head(table: Tensor, tied: bool) -> (QMatMul, Option<Linear>) {
    let head = tied.then(|| Linear::Candle(QMatMul::Tensor(table.clone())));
    (QMatMul::Tensor(table), head)
}

/// The embedding as the file stores it (GGUF blocks or f32), and a tied head converted from it to
/// the source's weight format.
pub fn file_embedding_and_tied_head<S: WeightSource + ?Sized>(
    source: &S,
    vocab_size: usize,
    hidden_size: usize,
) -> Result<(QMatMul, Option<Linear>)> {
    let table = source.matrix("token_embd.weight", vocab_size, hidden_size)?;
    let head = if source.ties_embeddings() {
        let head = source
            .weight_format()
            .convert(table.clone(), source.dtype())
            .map_err(|e| EngineError::model_load_from("cannot convert the output head", e))?;
        Some(head)
    } else {
        None
    };
    let embedding = QMatMul::from_arc(table)
        .map_err(|e| EngineError::model_load_from("cannot read the token embedding", e))?;
    Ok((embedding, head))
}

impl GgufFile {
    /// A tensor of shape `dims`, dequantized into the compute dtype.
    fn dense(&self, name: &str, dims: &[usize]) -> Result<Tensor> {
        let tensor = self.tensor(name, dims)?;
        tensor
            .dequantize(&tensor.device())
            .and_then(|t| t.to_dtype(GgufFile::dtype(self)))
            .map_err(|e| {
                EngineError::model_load_from(
                    format_args!("{}: cannot read `{name}`", self.path().display()),
                    e,
                )
            })
    }
}

impl WeightSource for GgufFile {
    fn linear(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Linear> {
        let tensor = Arc::new(self.tensor(name, &[out_dim, in_dim])?);
        GgufFile::weight_format(self)
            .convert(tensor, GgufFile::dtype(self))
            .map_err(|e| {
                EngineError::model_load_from(
                    format_args!("{}: cannot convert `{name}`", self.path().display()),
                    e,
                )
            })
    }

    fn vector(&self, name: &str, len: usize) -> Result<Tensor> {
        self.dense(name, &[len])
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Arc<QTensor>> {
        Ok(Arc::new(self.tensor(name, &[rows, cols])?))
    }

    /// GGUF stacks experts in one `[num_experts, out, in]` tensor: each expert's slice, in the
    /// file's own block type for `Native`, else converted like any projection.
    fn experts(
        &self,
        name: &str,
        num_experts: usize,
        out_dim: usize,
        in_dim: usize,
    ) -> Result<Vec<Linear>> {
        let stacked = self.tensor(name, &[num_experts, out_dim, in_dim])?;
        let block_type = stacked.dtype();
        let error = |e| {
            EngineError::model_load_from(
                format_args!("{}: cannot split `{name}` into experts", self.path().display()),
                e,
            )
        };
        let dense = stacked.dequantize(&candle_core::Device::Cpu).map_err(error)?;
        (0..num_experts)
            .map(|e| {
                // A fresh tensor: candle's quantize reads a view's whole storage.
                let slice = dense
                    .get(e)
                    .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
                    .and_then(|values| Tensor::from_vec(values, (out_dim, in_dim), &candle_core::Device::Cpu))
                    .map_err(error)?;
                if !self.device().is_cpu() {
                    let on_device = slice
                        .to_device(self.device())
                        .and_then(|t| t.to_dtype(GgufFile::dtype(self)))
                        .map_err(error)?;
                    return Ok(Linear::Candle(QMatMul::Tensor(on_device)));
                }
                let requantized = QTensor::quantize(&slice, block_type)
                    .or_else(|_| QTensor::quantize(&slice, candle_core::quantized::GgmlDType::F32))
                    .map_err(error)?;
                self.weight_format()
                    .convert(Arc::new(requantized), GgufFile::dtype(self))
                    .map_err(error)
            })
            .collect()
    }

    fn expert_biases(&self, name: &str, num_experts: usize, len: usize) -> Result<Tensor> {
        self.dense(name, &[num_experts, len])
    }

    fn contains(&self, name: &str) -> bool {
        self.has_tensor(name)
    }

    fn weight_format(&self) -> WeightFormat {
        GgufFile::weight_format(self)
    }

    fn dtype(&self) -> DType {
        GgufFile::dtype(self)
    }
}
