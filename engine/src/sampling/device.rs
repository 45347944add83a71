//! `DeviceSampler`: the rows sampled where the logits are, on a GPU (`cuda` feature). Random rows
//! with nothing but a temperature, top-k / top-p / min-p and perhaps a grammar (no penalty,
//! bias, ban or log-probabilities) go through `pagoda-cuda-kernels`' sampling kernel, each with
//! one uniform number its sequence's seeded generator drew on the host, and greedy rows with a
//! grammar through its masked argmax; a grammar's token mask (vocabulary/32 words) is uploaded
//! with its row, and only the token ids come back. The kernels are specified by their host
//! twins, `thresholds.rs`. Elsewhere there is no device sampler and those rows are sampled on
//! the host.

use candle_core::Tensor;

use crate::constraint::TokenMask;
use crate::error::Result;

/// What the device path samples with: no penalty, bias, ban or log-probabilities.
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

/// One row for the device: its index in the logits, its filters, its uniform number, and the
/// grammar's mask of the tokens it may take, if it follows one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceRow<'a> {
    pub row: usize,
    pub filters: RowFilters,
    pub uniform: f64,
    pub allowed: Option<&'a TokenMask>,
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
    pub fn sample(&mut self, logits: &Tensor, rows: &[DeviceRow<'_>]) -> Result<Vec<u32>> {
        #[cfg(feature = "cuda")]
        if let candle_core::Device::Cuda(cuda) = logits.device() {
            return self.on_rows(cuda, logits, |kernel, view, (_, vocab_size)| {
                let (words, words_per_row) =
                    upload_words(rows.iter().filter_map(|r| r.allowed), vocab_size);
                let masks = pagoda_cuda_kernels::TokenMasks { words: &words, words_per_row };
                kernel.sample(view, vocab_size, &row_sampling(rows), &masks)
            });
        }
        let _ = rows;
        Err(not_on_gpu("sampler", logits))
    }

    /// The argmax of every row of `logits` (`[rows, vocab]`, on the GPU), ties to the lowest id.
    pub fn argmax(&mut self, logits: &Tensor) -> Result<Vec<u32>> {
        #[cfg(feature = "cuda")]
        if let candle_core::Device::Cuda(cuda) = logits.device() {
            return self.on_rows(cuda, logits, |kernel, view, (num_rows, vocab_size)| {
                kernel.argmax(view, vocab_size, num_rows)
            });
        }
        Err(not_on_gpu("argmax", logits))
    }

    /// For each `(row, mask)`, the best token `mask` allows in row `row` of `logits` (`[rows,
    /// vocab]`, on the GPU): `TokenMask::best_allowed`, token 0 when it allows none.
    pub fn argmax_allowed(&mut self, logits: &Tensor, rows: &[(usize, &TokenMask)]) -> Result<Vec<u32>> {
        #[cfg(feature = "cuda")]
        if let candle_core::Device::Cuda(cuda) = logits.device() {
            return self.on_rows(cuda, logits, |kernel, view, (_, vocab_size)| {
                let (words, words_per_row) = upload_words(rows.iter().map(|(_, mask)| *mask), vocab_size);
                let masks = pagoda_cuda_kernels::TokenMasks { words: &words, words_per_row };
                let indices: Vec<i32> = rows.iter().map(|(row, _)| *row as i32).collect();
                kernel.argmax_allowed(view, vocab_size, &indices, &masks)
            });
        }
        let _ = rows;
        Err(not_on_gpu("argmax", logits))
    }

    /// Runs `launch` with the kernels (loaded on first use) on `logits` as f32 rows on the GPU,
    /// and their `(num_rows, vocab_size)`.
    #[cfg(feature = "cuda")]
    fn on_rows<R>(
        &mut self,
        cuda: &candle_core::CudaDevice,
        logits: &Tensor,
        launch: impl FnOnce(
            &pagoda_cuda_kernels::SamplingKernel,
            &candle_core::cuda_backend::cudarc::driver::CudaView<'_, f32>,
            (usize, usize),
        ) -> candle_core::Result<R>,
    ) -> Result<R> {
        use crate::gpu::rows::{cuda_storage, rows_of};
        if self.kernel.is_none() {
            self.kernel = Some(pagoda_cuda_kernels::SamplingKernel::load(cuda)?);
        }
        let kernel = self.kernel.as_ref().ok_or_else(|| {
            crate::error::EngineError::Execution("the sampling kernel did not load".into())
        })?;
        let logits = logits.to_dtype(candle_core::DType::F32)?.contiguous()?;
        let dims = logits.dims2()?;
        let (storage, layout) = logits.storage_and_layout();
        let view = rows_of::<f32>(cuda_storage(&storage)?, layout)?;
        Ok(launch(kernel, &view.view, dims)?)
    }
}

/// The error for a device kernel called on logits that are not on a GPU.
fn not_on_gpu(what: &str, logits: &Tensor) -> crate::error::EngineError {
    crate::error::EngineError::Execution(format!(
        "no device {what} for logits on {:?}",
        logits.device().location()
    ))
}

/// The kernel's parameters of each row; a row with a mask names it by its place among the rows
/// with one (the order `upload_words` uploads them in).
#[cfg(feature = "cuda")]
fn row_sampling(rows: &[DeviceRow<'_>]) -> Vec<pagoda_cuda_kernels::RowSampling> {
    let mut num_masks = 0;
    rows.iter()
        .map(|r| pagoda_cuda_kernels::RowSampling {
            row: r.row as i32,
            inv_temperature: r.filters.inv_temperature,
            top_k: i32::try_from(r.filters.top_k).unwrap_or(i32::MAX),
            top_p: r.filters.top_p,
            min_p: r.filters.min_p,
            // f32 just below 1 at most: the draw's target stays inside the kept mass.
            uniform: (r.uniform as f32).min(1.0 - f32::EPSILON / 2.0),
            mask: match r.allowed {
                Some(_) => {
                    num_masks += 1;
                    num_masks - 1
                }
                None => -1,
            },
        })
        .collect()
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
/// `masks` one after another as the kernels read them: `vocab_size.div_ceil(32)` words each,
/// a mask shorter than the logits' rows padded with zero words (tokens past it not allowed, as
/// `TokenMask::apply_to` leaves them), a longer one cut. Returns the words and the words a mask.
pub fn upload_words<'a>(masks: impl Iterator<Item = &'a TokenMask>, vocab_size: usize) -> (Vec<u32>, usize) {
    let words_per_row = vocab_size.div_ceil(32);
    let mut words = Vec::new();
    for mask in masks {
        let own = mask.words();
        let kept = own.len().min(words_per_row);
        words.extend_from_slice(&own[..kept]);
        words.resize(words.len() + words_per_row - kept, 0);
    }
    (words, words_per_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_upload_padded_or_cut_to_the_logits_rows() {
        let mut short = TokenMask::new(40);
        short.allow(3);
        short.allow(39);
        let mut long = TokenMask::new(200);
        long.allow(70);
        long.allow(199);
        let (words, per_row) = upload_words([&short, &long].into_iter(), 100);
        assert_eq!(per_row, 4);
        assert_eq!(words, vec![1 << 3, 1 << 7, 0, 0, 0, 0, 1 << 6, 0]);
        let (none, per_row) = upload_words(std::iter::empty(), 100);
        assert!(none.is_empty() && per_row == 4);
    }
}
