//! The partial results of split-K attention (each partition's accumulator, max and sum): one
//! pair of buffers per cache, allocated when a step first splits, grown when a step needs more,
//! and reused by every layer and every step after (the launches of one stream run in order,
//! so a layer's reduction has read them before the next layer's kernel writes them).

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, CudaStream};
use candle_core::Result;

#[derive(Debug, Default)]
pub struct SplitScratch {
    acc: Option<CudaSlice<f32>>,
    ml: Option<CudaSlice<f32>>,
}

/// `buffer` with room for at least `len` elements (a power of two, so growth is rare).
fn ensure<'a>(
    buffer: &'a mut Option<CudaSlice<f32>>,
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<&'a mut CudaSlice<f32>> {
    let len = len.max(1);
    if buffer.as_ref().is_none_or(|b| b.len() < len) {
        *buffer = None;
        // SAFETY: the kernels write a partition's slots before the reduction reads them and
        // never read a slot no partition of the same launch wrote, so stale contents are unread.
        #[allow(unsafe_code)]
        let fresh = unsafe { stream.alloc::<f32>(len.next_power_of_two()) }
            .map_err(candle_core::Error::wrap)?;
        *buffer = Some(fresh);
    }
    buffer
        .as_mut()
        .ok_or_else(|| candle_core::Error::msg("split-K scratch missing after allocation"))
}

impl SplitScratch {
    /// The accumulator and max/sum buffers, at least `acc_len` and `ml_len` long.
    pub fn buffers(
        &mut self,
        stream: &Arc<CudaStream>,
        acc_len: usize,
        ml_len: usize,
    ) -> Result<(&mut CudaSlice<f32>, &mut CudaSlice<f32>)> {
        ensure(&mut self.acc, stream, acc_len)?;
        ensure(&mut self.ml, stream, ml_len)?;
        match (self.acc.as_mut(), self.ml.as_mut()) {
            (Some(acc), Some(ml)) => Ok((acc, ml)),
            _ => Err(candle_core::Error::msg("split-K scratch missing")),
        }
    }
}
