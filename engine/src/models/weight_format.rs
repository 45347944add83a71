//! `WeightFormat`: how projection weights are held in memory, and the conversion into it.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Tensor};

use super::int4::Int4Matrix;
use super::int8::{Int8Matrix, GROUP_SIZE};
use super::linear::Linear;
use super::vnni::{ActivationBits, VnniMatrix};

/// How projection weights are held in memory (CPU). Embedding lookups use the file's tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// `Vnni15` where this CPU has AVX-512 VNNI, else `Int4` where it runs the int4 rows on the
    /// AVX-512 tiles, else `Int8`: the fastest format whose answers follow an f32 model (`Vnni`
    /// is faster still and is chosen explicitly).
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
    /// `Vnni`'s weights with the activations quantized to 15 bits per 32 values (within
    /// ~3·10⁻⁵ of each group's largest value, so answers follow an f32 model): faster than `Int4`
    /// at one and two activation rows (decode) and from eight on (prefill), about as fast at four
    /// to six. Refused at start on a CPU without AVX-512 VNNI.
    Vnni15,
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
            "vnni15" => Some(Self::Vnni15),
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
            Self::Vnni15 => "vnni15",
        }
    }

    /// What `self` is on this CPU: `Auto` made concrete (`Vnni15`, `Int4` or `Int8`), the others
    /// as they are.
    pub fn resolved(self) -> Self {
        match self {
            Self::Auto if VnniMatrix::fast_here() => Self::Vnni15,
            Self::Auto if Int4Matrix::fast_here() => Self::Int4,
            Self::Auto => Self::Int8,
            other => other,
        }
    }

    /// How a VNNI format quantizes the activations (`None` for the other formats).
    fn vnni_activations(self) -> Option<ActivationBits> {
        match self {
            Self::Vnni => Some(ActivationBits::Eight),
            Self::Vnni15 => Some(ActivationBits::Fifteen),
            _ => None,
        }
    }

    /// Why this CPU cannot hold weights in `self`, if it cannot.
    pub fn unsupported_here(self) -> Option<String> {
        (self.vnni_activations().is_some() && !VnniMatrix::fast_here()).then(|| {
            format!(
                "--weight-format {} needs a CPU with AVX-512 VNNI (avx512f, avx512bw, \
                 avx512vnni); use auto, int4 or int8",
                self.as_str()
            )
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
            format @ (Self::Int4 | Self::Int8 | Self::Vnni | Self::Vnni15)
                if cols % GROUP_SIZE == 0 =>
            {
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
            Self::Int4 | Self::Vnni | Self::Vnni15 if Int4Matrix::takes(tensor.dtype()) => {
                let (rows, cols) = tensor.shape().dims2()?;
                let matrix =
                    Int4Matrix::from_gguf_blocks(tensor.dtype(), &tensor.data()?, rows, cols)
                        .map_err(candle_core::Error::Msg)?;
                Ok(match format.vnni_activations() {
                    Some(bits) => Linear::Vnni(VnniMatrix::from_int4(&matrix, bits)),
                    None => Linear::Int4(matrix),
                })
            }
            Self::Int4 | Self::Int8 | Self::Vnni | Self::Vnni15 if cols % GROUP_SIZE == 0 => {
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
        match self.vnni_activations() {
            Some(bits) => Linear::Vnni(VnniMatrix::from_int8(&matrix, bits)),
            None => Linear::Int8(matrix),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_resolves_to_the_fastest_format_that_follows_f32() {
        let resolved = WeightFormat::Auto.resolved();
        let expected = if VnniMatrix::fast_here() {
            WeightFormat::Vnni15
        } else if Int4Matrix::fast_here() {
            WeightFormat::Int4
        } else {
            WeightFormat::Int8
        };
        assert_eq!(resolved, expected);
        for format in [
            WeightFormat::Int4,
            WeightFormat::Int8,
            WeightFormat::F32,
            WeightFormat::Native,
            WeightFormat::Vnni,
            WeightFormat::Vnni15,
        ] {
            assert_eq!(format.resolved(), format);
            assert_eq!(WeightFormat::parse(format.as_str()), Some(format));
        }
    }

    #[test]
    fn vnni_is_refused_by_name_only_where_the_cpu_lacks_it() {
        for format in [WeightFormat::Vnni, WeightFormat::Vnni15] {
            match format.unsupported_here() {
                Some(why) => {
                    assert!(!VnniMatrix::fast_here());
                    let named = format!("--weight-format {} needs", format.as_str());
                    assert!(why.contains("avx512vnni") && why.contains(&named), "{why}");
                }
                None => assert!(VnniMatrix::fast_here()),
            }
        }
        for format in [
            WeightFormat::Auto,
            WeightFormat::Int4,
            WeightFormat::Int8,
            WeightFormat::F32,
            WeightFormat::Native,
        ] {
            assert_eq!(format.unsupported_here(), None, "{format:?}");
        }
    }

    /// A GGUF file's Q4_1 and Q8_0 tensors as `vnni` and `vnni15` hold them: 4-bit codes kept,
    /// 8-bit ones from the dequantized values, each format quantizing its activations as named.
    #[test]
    fn vnni_holds_4_bit_blocks_and_every_other_grouped_type() {
        use candle_core::quantized::QTensor;
        let values: Vec<f32> = (0..40 * 64)
            .map(|i| ((i * 7919 % 2003) as f32 / 1001.0) - 1.0)
            .collect();
        let dense =
            Tensor::from_slice(&values, (40, 64), &candle_core::Device::Cpu).expect("tensor");
        let formats = [
            (WeightFormat::Vnni, ActivationBits::Eight),
            (WeightFormat::Vnni15, ActivationBits::Fifteen),
        ];
        for ((format, bits), dtype) in formats
            .into_iter()
            .flat_map(|f| [(f, GgmlDType::Q4_1), (f, GgmlDType::Q8_0)])
        {
            let tensor = Arc::new(QTensor::quantize(&dense, dtype).expect("quantize"));
            let Ok(Linear::Vnni(vnni)) = format.convert(tensor.clone(), DType::F32) else {
                panic!("{format:?} {dtype:?} is not held as VNNI codes");
            };
            assert_eq!(vnni.activation_bits(), bits, "{format:?}");
            let reference = match WeightFormat::Int4.convert(tensor, DType::F32) {
                Ok(Linear::Int4(m)) => m.dequantize(),
                Ok(Linear::Int8(m)) => m.dequantize(),
                other => panic!("{dtype:?}: {other:?}"),
            };
            assert_eq!(vnni.dequantize(), reference, "{format:?} {dtype:?}");
        }
    }
}
