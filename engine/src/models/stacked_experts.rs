//! Expert weights a Hugging Face checkpoint stacks in one tensor per projection (gpt-oss):
//! `[num_experts, in, out]` weights and `[num_experts, out]` biases, a projection taking all
//! outputs or every other one (gate and up interleaved), or, as released, MXFP4 weights
//! (`{name}_blocks` `[num_experts, out, in / 32, 16]` and `{name}_scales`), dequantized here.
//! Read once at load into f32 `[num_experts, out, in]` (weights) or `[num_experts, out]`.

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};

use super::families::{OutputPart, StackedExperts};
use super::mxfp4;

/// The experts' part of `stacked` in the layers' layout, checked against `dims`
/// (`[num_experts, out, in]` or `[num_experts, out]`); errors name the tensor.
pub fn load(
    tensors: &MmapedSafetensors,
    stacked: &StackedExperts,
    dims: &[usize],
) -> Result<Tensor, String> {
    let name = &stacked.hf_name;
    let fail = |e: candle_core::Error| format!("tensor `{name}`: {e}");
    let blocks_name = format!("{name}_blocks");
    let tensor = if tensors.get(&blocks_name).is_ok() {
        // MXFP4 keeps the outputs before the inputs.
        let full = dequantize(tensors, name)?;
        select(&full, stacked.part, 1).map_err(fail)?
    } else {
        let raw = tensors.load(name, &Device::Cpu).map_err(fail)?;
        if !matches!(raw.dtype(), DType::F32 | DType::F16 | DType::BF16) {
            return Err(format!(
                "tensor `{name}` has dtype {:?}; expected f32, f16, bf16 or MXFP4 (`{blocks_name}`)",
                raw.dtype()
            ));
        }
        let raw = raw.to_dtype(DType::F32).map_err(fail)?;
        let last = raw.rank() - 1;
        let part = select(&raw, stacked.part, last).map_err(fail)?;
        if part.rank() == 3 {
            part.transpose(1, 2).and_then(|t| t.contiguous()).map_err(fail)?
        } else {
            part
        }
    };
    if tensor.dims() != dims {
        return Err(format!(
            "tensor `{name}` gives experts of shape {:?}, expected {dims:?}",
            tensor.dims()
        ));
    }
    Ok(tensor)
}

/// `{name}_blocks` with `{name}_scales` as f32 `[num_experts, out, in]`.
fn dequantize(tensors: &MmapedSafetensors, name: &str) -> Result<Tensor, String> {
    let read = |suffix: &str| -> Result<(Vec<u8>, Vec<usize>), String> {
        let tensor_name = format!("{name}{suffix}");
        let tensor = tensors
            .load(&tensor_name, &Device::Cpu)
            .map_err(|e| format!("tensor `{tensor_name}`: {e}"))?;
        if tensor.dtype() != DType::U8 {
            return Err(format!("tensor `{tensor_name}` has dtype {:?}; expected u8", tensor.dtype()));
        }
        let dims = tensor.dims().to_vec();
        let bytes = tensor
            .flatten_all()
            .and_then(|t| t.to_vec1::<u8>())
            .map_err(|e| format!("tensor `{tensor_name}`: {e}"))?;
        Ok((bytes, dims))
    };
    let (blocks, block_dims) = read("_blocks")?;
    let (scales, scale_dims) = read("_scales")?;
    let (num_experts, out, num_blocks) = match (block_dims.as_slice(), scale_dims.as_slice()) {
        ([e, o, g, b], [se, so, sg]) if *b == mxfp4::BLOCK_BYTES && (e, o, g) == (se, so, sg) => {
            (*e, *o, *g)
        }
        _ => {
            return Err(format!(
                "MXFP4 tensor `{name}`: blocks {block_dims:?} and scales {scale_dims:?} do not \
                 match ([experts, out, in/32, 16] and [experts, out, in/32])"
            ))
        }
    };
    let values = mxfp4::dequantize(&blocks, &scales)
        .ok_or_else(|| format!("MXFP4 tensor `{name}`: blocks and scales differ in length"))?;
    Tensor::from_vec(values, (num_experts, out, num_blocks * 32), &Device::Cpu)
        .map_err(|e| format!("MXFP4 tensor `{name}`: {e}"))
}

/// The `part` of `tensor`'s entries along `dim`.
fn select(tensor: &Tensor, part: OutputPart, dim: usize) -> candle_core::Result<Tensor> {
    let first = match part {
        OutputPart::All => return Ok(tensor.clone()),
        OutputPart::Even => 0,
        OutputPart::Odd => 1,
    };
    let len = tensor.dim(dim)?;
    let index: Vec<u32> = (first..len).step_by(2).map(|i| i as u32).collect();
    let index = Tensor::new(index.as_slice(), tensor.device())?;
    tensor.index_select(&index, dim)?.contiguous()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn stacked(name: &str, part: OutputPart) -> StackedExperts {
        StackedExperts {
            hf_name: name.into(),
            part,
        }
    }

    fn open(tensors: HashMap<String, Tensor>) -> (tempfile::TempDir, MmapedSafetensors) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        candle_core::safetensors::save(&tensors, &path).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: the file is written above and not modified while mapped.
        let mapped = unsafe { MmapedSafetensors::new(&path) }.unwrap();
        (dir, mapped)
    }

    #[test]
    fn interleaved_outputs_split_and_transpose_into_the_layers_layout() {
        // 2 experts, in 3, outputs 4 (gate, up, gate, up): value = 100·e + 10·i + o.
        let values: Vec<f32> = (0..2)
            .flat_map(|e| (0..3).flat_map(move |i| (0..4).map(move |o| (100 * e + 10 * i + o) as f32)))
            .collect();
        let weight = Tensor::from_vec(values, (2, 3, 4), &Device::Cpu).unwrap();
        let bias = Tensor::from_vec((0..8).map(|v| v as f32).collect::<Vec<_>>(), (2, 4), &Device::Cpu).unwrap();
        let (_dir, tensors) = open(HashMap::from([("w".to_string(), weight), ("b".to_string(), bias)]));
        let up = load(&tensors, &stacked("w", OutputPart::Odd), &[2, 2, 3]).unwrap();
        assert_eq!(up.get(1).unwrap().to_vec2::<f32>().unwrap(), [[101.0, 111.0, 121.0], [103.0, 113.0, 123.0]]);
        let gate_bias = load(&tensors, &stacked("b", OutputPart::Even), &[2, 2]).unwrap();
        assert_eq!(gate_bias.to_vec2::<f32>().unwrap(), [[0.0, 2.0], [4.0, 6.0]]);
        let error = load(&tensors, &stacked("w", OutputPart::All), &[2, 3, 3]).unwrap_err();
        assert!(error.contains("`w`") && error.contains("[2, 4, 3]"), "{error}");
    }

    #[test]
    fn mxfp4_blocks_dequantize_with_outputs_first() {
        // 1 expert, 2 outputs, 32 inputs: output 0 all 1.0 (code 2), output 1 all -3.0 (code 13)
        // at scale 2^1.
        let mut blocks = vec![0x22u8; 16];
        blocks.extend([0xddu8; 16]);
        let blocks = Tensor::from_vec(blocks, (1, 2, 1, 16), &Device::Cpu).unwrap();
        let scales = Tensor::from_vec(vec![127u8, 128], (1, 2, 1), &Device::Cpu).unwrap();
        let (_dir, tensors) = open(HashMap::from([
            ("w_blocks".to_string(), blocks),
            ("w_scales".to_string(), scales),
        ]));
        let odd = load(&tensors, &stacked("w", OutputPart::Odd), &[1, 1, 32]).unwrap();
        assert!(odd.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().all(|v| *v == -6.0));
        let all = load(&tensors, &stacked("w", OutputPart::All), &[1, 2, 32]).unwrap();
        assert_eq!(all.get(0).unwrap().get(0).unwrap().to_vec1::<f32>().unwrap(), vec![1.0; 32]);
    }
}
