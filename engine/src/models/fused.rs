//! `FusedOps`: the decoder layers' element-wise steps (the SwiGLU activation, the residual add
//! with the next RMS norm, the rotary embedding of queries and keys) as one kernel each on a GPU (`pagoda-cuda-kernels`' fused.cu),
//! and as candle ops elsewhere. The GPU path saves launches and the shape/stride uploads candle
//! makes for the strided views these steps read; both paths compute the same values. Gemma's
//! GeGLU and final logit softcap run on the CPU as [`crate::fast_math`]'s vectorized loops
//! (candle's CPU `gelu` and `tanh` call the library's `tanh` once per value).

use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;

use super::rotary::StepRotary;
use crate::fast_math;
use crate::error::Result;

/// The fused kernels of the model's device (none on the CPU).
#[derive(Debug, Clone, Default)]
pub struct FusedOps {
    #[cfg(feature = "cuda")]
    kernels: Option<std::sync::Arc<pagoda_cuda_kernels::FusedKernels>>,
}

/// The query and key heads rotated per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QkHeads {
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
}

impl FusedOps {
    /// Loads the kernels once when `device` is a GPU.
    pub fn new(device: &Device) -> Result<Self> {
        #[cfg(feature = "cuda")]
        if let Device::Cuda(cuda) = device {
            let kernels = pagoda_cuda_kernels::FusedKernels::load(cuda)?;
            return Ok(Self {
                kernels: Some(std::sync::Arc::new(kernels)),
            });
        }
        let _ = device;
        Ok(Self::default())
    }

    /// `silu(gate) · up` of `gate_up` (`[num_tokens, 2 · width]`, the gate first).
    pub fn silu_mul(&self, gate_up: &Tensor, width: usize) -> Result<Tensor> {
        #[cfg(feature = "cuda")]
        if let (Some(kernels), true) = (&self.kernels, gate_up.dim(0)? > 0) {
            return cuda::silu_mul(kernels, gate_up, width);
        }
        let gate = candle_nn::ops::silu(&gate_up.narrow(1, 0, width)?)?;
        let up = gate_up.narrow(1, width, width)?;
        Ok((gate * up)?)
    }

    /// `gelu_tanh(gate) · up` of `gate_up` (`[num_tokens, 2 · width]`, the gate first), PyTorch's
    /// `gelu(approximate="tanh")`.
    pub fn gelu_tanh_mul(&self, gate_up: &Tensor, width: usize) -> Result<Tensor> {
        if !is_cpu_f32(gate_up) {
            let gate = gate_up.narrow(1, 0, width)?.gelu()?;
            let up = gate_up.narrow(1, width, width)?;
            return Ok((gate * up)?);
        }
        let num_tokens = gate_up.dim(0)?;
        let values = gate_up.flatten_all()?.to_vec1::<f32>()?;
        let mut out = vec![0.0f32; num_tokens * width];
        values
            .par_chunks(2 * width * ROWS_PER_JOB)
            .zip(out.par_chunks_mut(width * ROWS_PER_JOB))
            .for_each(|(rows, out)| fast_math::gelu_tanh_mul_rows(rows, width, out));
        Ok(Tensor::from_vec(out, (num_tokens, width), gate_up.device())?)
    }

    /// `cap · tanh(logits / cap)`: Gemma's final logit softcap.
    pub fn softcap(&self, logits: &Tensor, cap: f32) -> Result<Tensor> {
        if !is_cpu_f32(logits) {
            return Ok(((logits / cap as f64)?.tanh()? * cap as f64)?);
        }
        let mut values = logits.flatten_all()?.to_vec1::<f32>()?;
        values
            .par_chunks_mut(SOFTCAP_VALUES_PER_JOB)
            .for_each(|chunk| fast_math::softcap_in_place(chunk, cap));
        Ok(Tensor::from_vec(values, logits.shape(), logits.device())?)
    }

    /// The residual add and the next RMS norm: `sum = x + residual`, `normed = rms_norm(sum) ·
    /// weight` (`[num_tokens, hidden]` both), as candle's add then rms_norm compute them.
    pub fn add_rms_norm(
        &self,
        x: &Tensor,
        residual: &Tensor,
        (weight, eps): (&Tensor, f32),
    ) -> Result<(Tensor, Tensor)> {
        #[cfg(feature = "cuda")]
        if let (Some(kernels), true) = (&self.kernels, x.dim(0)? > 0) {
            return cuda::add_rms_norm(kernels, x, residual, (weight, eps));
        }
        let sum = (x + residual)?;
        let normed = candle_nn::ops::rms_norm(&sum, weight, eps)?;
        Ok((sum, normed))
    }

    /// Rotates `q` (`[num_tokens, heads · head_dim]`) and `k` (`[num_tokens, kv_heads ·
    /// head_dim]`), whose rows may be strided, with the step's cos/sin rows; returns contiguous
    /// rotated copies.
    pub fn rope_qk(
        &self,
        (q, k): (&Tensor, &Tensor),
        rotary: &StepRotary,
        heads: QkHeads,
    ) -> Result<(Tensor, Tensor)> {
        #[cfg(feature = "cuda")]
        if let (Some(kernels), true) = (&self.kernels, q.dim(0)? > 0) {
            return cuda::rope_qk(kernels, (q, k), rotary, heads);
        }
        Ok((
            rotary.apply(q, heads.num_heads)?,
            rotary.apply(k, heads.num_kv_heads)?,
        ))
    }
}

/// Rows of a GeGLU one CPU job activates; values of a softcap one job caps (a vocabulary row).
const ROWS_PER_JOB: usize = 8;
const SOFTCAP_VALUES_PER_JOB: usize = 1 << 16;

fn is_cpu_f32(tensor: &Tensor) -> bool {
    tensor.device().is_cpu() && tensor.dtype() == DType::F32
}

#[cfg(feature = "cuda")]
mod cuda {
    use candle_core::cuda_backend::cudarc::driver::DeviceRepr;
    use candle_core::cuda_backend::CudaDType;
    use candle_core::{DType, Tensor};
    use half::{bf16, f16};
    use pagoda_cuda_kernels::{FusedKernels, KernelDType, RopeHeads};

    use super::QkHeads;
    use crate::error::{EngineError, Result};
    use crate::models::rotary::StepRotary;
    use crate::gpu::rows::{cuda_storage, rows_of, tensor_from_slice};

    fn kernel_dtype(dtype: DType) -> Result<KernelDType> {
        match dtype {
            DType::F32 => Ok(KernelDType::F32),
            DType::F16 => Ok(KernelDType::F16),
            DType::BF16 => Ok(KernelDType::Bf16),
            other => Err(EngineError::Execution(format!(
                "the fused kernels take f32, f16 or bf16, not {other:?}"
            ))),
        }
    }

    pub fn silu_mul(kernels: &FusedKernels, gate_up: &Tensor, width: usize) -> Result<Tensor> {
        let gate_up = gate_up.contiguous()?;
        match gate_up.dtype() {
            DType::F32 => silu_mul_typed::<f32>(kernels, &gate_up, width),
            DType::F16 => silu_mul_typed::<f16>(kernels, &gate_up, width),
            _ => silu_mul_typed::<bf16>(kernels, &gate_up, width),
        }
    }

    fn silu_mul_typed<T: CudaDType + DeviceRepr>(
        kernels: &FusedKernels,
        gate_up: &Tensor,
        width: usize,
    ) -> Result<Tensor> {
        let dtype = kernel_dtype(gate_up.dtype())?;
        let (num_rows, _) = gate_up.dims2()?;
        let device = gate_up.device().as_cuda_device()?;
        let (storage, layout) = gate_up.storage_and_layout();
        let rows = rows_of::<T>(cuda_storage(&storage)?, layout)?;
        // SAFETY: silu_mul writes every one of the `num_rows · width` elements.
        #[allow(unsafe_code)]
        let mut out = unsafe { device.alloc::<T>(num_rows * width) }?;
        kernels.silu_mul(dtype, &rows.view, &mut out, num_rows, width)?;
        Ok(tensor_from_slice(out, device, (num_rows, width)))
    }

    pub fn add_rms_norm(
        kernels: &FusedKernels,
        x: &Tensor,
        residual: &Tensor,
        (weight, eps): (&Tensor, f32),
    ) -> Result<(Tensor, Tensor)> {
        let (x, residual) = (x.contiguous()?, residual.contiguous()?);
        match x.dtype() {
            DType::F32 => add_rms_norm_typed::<f32>(kernels, (&x, &residual), (weight, eps)),
            DType::F16 => add_rms_norm_typed::<f16>(kernels, (&x, &residual), (weight, eps)),
            _ => add_rms_norm_typed::<bf16>(kernels, (&x, &residual), (weight, eps)),
        }
    }

    fn add_rms_norm_typed<T: CudaDType + DeviceRepr>(
        kernels: &FusedKernels,
        (x, residual): (&Tensor, &Tensor),
        (weight, eps): (&Tensor, f32),
    ) -> Result<(Tensor, Tensor)> {
        let dtype = kernel_dtype(x.dtype())?;
        let (num_rows, width) = x.dims2()?;
        let weight = weight.to_dtype(x.dtype())?.reshape((1, width))?;
        let device = x.device().as_cuda_device()?;
        let (x_storage, x_layout) = x.storage_and_layout();
        let (r_storage, r_layout) = residual.storage_and_layout();
        let (w_storage, w_layout) = weight.storage_and_layout();
        let x_rows = rows_of::<T>(cuda_storage(&x_storage)?, x_layout)?;
        let r_rows = rows_of::<T>(cuda_storage(&r_storage)?, r_layout)?;
        let w_rows = rows_of::<T>(cuda_storage(&w_storage)?, w_layout)?;
        // SAFETY: add_rms_norm writes every element of both outputs.
        #[allow(unsafe_code)]
        let (mut sum, mut normed) = unsafe {
            (
                device.alloc::<T>(num_rows * width)?,
                device.alloc::<T>(num_rows * width)?,
            )
        };
        kernels.add_rms_norm(
            dtype,
            (&x_rows.view, &r_rows.view),
            &w_rows.view,
            (&mut sum, &mut normed),
            num_rows,
            eps,
        )?;
        Ok((
            tensor_from_slice(sum, device, (num_rows, width)),
            tensor_from_slice(normed, device, (num_rows, width)),
        ))
    }

    pub fn rope_qk(
        kernels: &FusedKernels,
        (q, k): (&Tensor, &Tensor),
        rotary: &StepRotary,
        heads: QkHeads,
    ) -> Result<(Tensor, Tensor)> {
        match q.dtype() {
            DType::F32 => rope_qk_typed::<f32>(kernels, (q, k), rotary, heads),
            DType::F16 => rope_qk_typed::<f16>(kernels, (q, k), rotary, heads),
            _ => rope_qk_typed::<bf16>(kernels, (q, k), rotary, heads),
        }
    }

    fn rope_qk_typed<T: CudaDType + DeviceRepr>(
        kernels: &FusedKernels,
        (q, k): (&Tensor, &Tensor),
        rotary: &StepRotary,
        layout: QkHeads,
    ) -> Result<(Tensor, Tensor)> {
        let dtype = kernel_dtype(q.dtype())?;
        let (cos, sin) = rotary.tables();
        let num_tokens = q.dim(0)?;
        let half = layout.head_dim / 2;
        let (cos, sin) = (
            cos.reshape((num_tokens, half))?.contiguous()?,
            sin.reshape((num_tokens, half))?.contiguous()?,
        );
        let device = q.device().as_cuda_device()?;
        let (q_storage, q_layout) = q.storage_and_layout();
        let (k_storage, k_layout) = k.storage_and_layout();
        let (cos_storage, cos_layout) = cos.storage_and_layout();
        let (sin_storage, sin_layout) = sin.storage_and_layout();
        let q_rows = rows_of::<T>(cuda_storage(&q_storage)?, q_layout)?;
        let k_rows = rows_of::<T>(cuda_storage(&k_storage)?, k_layout)?;
        let cos_rows = rows_of::<T>(cuda_storage(&cos_storage)?, cos_layout)?;
        let sin_rows = rows_of::<T>(cuda_storage(&sin_storage)?, sin_layout)?;
        let (q_width, k_width) = (
            layout.num_heads * layout.head_dim,
            layout.num_kv_heads * layout.head_dim,
        );
        // SAFETY: rope_qk writes both elements of every pair of every head of every token.
        #[allow(unsafe_code)]
        let (mut q_out, mut k_out) = unsafe {
            (
                device.alloc::<T>(num_tokens * q_width)?,
                device.alloc::<T>(num_tokens * k_width)?,
            )
        };
        let heads = RopeHeads {
            num_heads: layout.num_heads,
            num_kv_heads: layout.num_kv_heads,
            head_dim: layout.head_dim,
            interleaved: rotary.interleaved(),
        };
        kernels.rope_qk(
            dtype,
            num_tokens,
            (&q_rows, &k_rows),
            (&cos_rows.view, &sin_rows.view),
            (&mut q_out, &mut k_out),
            heads,
        )?;
        Ok((
            tensor_from_slice(q_out, device, (num_tokens, q_width)),
            tensor_from_slice(k_out, device, (num_tokens, k_width)),
        ))
    }
}
