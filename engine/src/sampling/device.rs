//! `DeviceSampler`: the rows sampled where the logits are, on a GPU (`cuda` feature). Plain
//! random rows (a temperature, with top-k / top-p / min-p; no penalty, bias, ban, grammar or
//! log-probabilities) go through `pagoda-cuda-kernels`' sampling kernel, each with one uniform
//! number its sequence's seeded generator drew on the host; only their token ids come back.
//! The kernel is specified by its host twin, `thresholds.rs`. Elsewhere there is no device
//! sampler and those rows are sampled on the host.

use candle_core::Tensor;

use crate::error::Result;

/// What the device path samples with: no penalty, bias, ban, grammar or log-probabilities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowFilters {
    pub inv_temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    /// ≥ 1 = off.
    pub top_p: f32,
    /// ≤ 0 = off.
    pub min_p: f32,
}

/// One row for the device: its index in the logits, its filters and its uniform number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceRow {
    pub row: usize,
    pub filters: RowFilters,
    pub uniform: f64,
}

#[derive(Debug, Default)]
pub struct DeviceSampler {
    #[cfg(feature = "cuda")]
    kernel: Option<pagoda_cuda_kernels::SamplingKernel>,
}

impl DeviceSampler {
    /// Whether rows of `logits` can be sampled where they are.
    pub fn serves(&self, logits: &Tensor) -> bool {
        cfg!(feature = "cuda") && logits.device().is_cuda()
    }

    /// One token per entry of `rows`, from `logits` (`[rows, vocab]`, f32, on the GPU).
    pub fn sample(&mut self, logits: &Tensor, rows: &[DeviceRow]) -> Result<Vec<u32>> {
        #[cfg(feature = "cuda")]
        if let candle_core::Device::Cuda(cuda) = logits.device() {
            return self.sample_on_gpu(cuda, logits, rows);
        }
        let _ = rows;
        Err(crate::error::EngineError::Execution(format!(
            "no device sampler for logits on {:?}",
            logits.device().location()
        )))
    }

    /// The argmax of every row of `logits` (`[rows, vocab]`, on the GPU), ties to the lowest id.
    pub fn argmax(&mut self, logits: &Tensor) -> Result<Vec<u32>> {
        #[cfg(feature = "cuda")]
        if let candle_core::Device::Cuda(cuda) = logits.device() {
            use crate::gpu::rows::{cuda_storage, rows_of};
            let kernel = self.kernel(cuda)?;
            let logits = logits.to_dtype(candle_core::DType::F32)?.contiguous()?;
            let (num_rows, vocab_size) = logits.dims2()?;
            let (storage, layout) = logits.storage_and_layout();
            let view = rows_of::<f32>(cuda_storage(&storage)?, layout)?;
            return Ok(kernel.argmax(&view.view, vocab_size, num_rows)?);
        }
        Err(crate::error::EngineError::Execution(format!(
            "no device argmax for logits on {:?}",
            logits.device().location()
        )))
    }

    /// The kernels, loaded on first use.
    #[cfg(feature = "cuda")]
    fn kernel(
        &mut self,
        cuda: &candle_core::CudaDevice,
    ) -> Result<&pagoda_cuda_kernels::SamplingKernel> {
        if self.kernel.is_none() {
            self.kernel = Some(pagoda_cuda_kernels::SamplingKernel::load(cuda)?);
        }
        self.kernel.as_ref().ok_or_else(|| {
            crate::error::EngineError::Execution("the sampling kernel did not load".into())
        })
    }

    #[cfg(feature = "cuda")]
    fn sample_on_gpu(
        &mut self,
        cuda: &candle_core::CudaDevice,
        logits: &Tensor,
        rows: &[DeviceRow],
    ) -> Result<Vec<u32>> {
        use pagoda_cuda_kernels::RowSampling;

        use crate::gpu::rows::{cuda_storage, rows_of};

        let kernel = self.kernel(cuda)?;
        let logits = logits.to_dtype(candle_core::DType::F32)?.contiguous()?;
        let (_, vocab_size) = logits.dims2()?;
        let params: Vec<RowSampling> = rows
            .iter()
            .map(|r| RowSampling {
                row: r.row as i32,
                inv_temperature: r.filters.inv_temperature,
                top_k: i32::try_from(r.filters.top_k).unwrap_or(i32::MAX),
                top_p: r.filters.top_p,
                min_p: r.filters.min_p,
                // f32 just below 1 at most: the draw's target stays inside the kept mass.
                uniform: (r.uniform as f32).min(1.0 - f32::EPSILON / 2.0),
            })
            .collect();
        let (storage, layout) = logits.storage_and_layout();
        let view = rows_of::<f32>(cuda_storage(&storage)?, layout)?;
        Ok(kernel.sample(&view.view, vocab_size, &params)?)
    }
}
