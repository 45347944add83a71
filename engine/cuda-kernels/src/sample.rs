//! Launchers of `kernels/sample.cu`: temperature / top-k / top-p / min-p sampling of chosen logits
//! rows on the GPU, with each row's uniform number drawn on the host, and the rows' argmax; only
//! token ids come back.

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaStream, CudaView, DeviceRepr, LaunchConfig, PushKernelArg,
};
use candle_core::{CudaDevice, Result};

use crate::module::{function, load_fatbin};

/// `kernels/sample.cu` as a fatbin (the architectures of build.rs).
pub const SAMPLE_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sample.fatbin"));

const THREADS: u32 = 1024;

/// One row to sample: `RowSampling` of the kernel (same field order, `repr(C)`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowSampling {
    /// The row of the logits matrix.
    pub row: i32,
    pub inv_temperature: f32,
    /// 0 = off.
    pub top_k: i32,
    /// ≥ 1 = off.
    pub top_p: f32,
    /// ≤ 0 = off.
    pub min_p: f32,
    /// In [0, 1): where the draw lands in the kept mass.
    pub uniform: f32,
}

// SAFETY: a plain `repr(C)` struct of 4-byte scalars, as the kernel declares it.
#[allow(unsafe_code)]
unsafe impl DeviceRepr for RowSampling {}

/// The sampling kernel of one device, looked up once.
#[derive(Debug, Clone)]
pub struct SamplingKernel {
    stream: Arc<CudaStream>,
    function: CudaFunction,
    argmax: CudaFunction,
}

impl SamplingKernel {
    pub fn load(device: &CudaDevice) -> Result<Self> {
        let (stream, module) = load_fatbin(device, SAMPLE_FATBIN)?;
        Ok(Self {
            function: function(&module, "sample_filtered")?,
            argmax: function(&module, "argmax_rows")?,
            stream,
        })
    }

    /// The argmax of each of the `num_rows` rows of `logits` (ties to the lowest index).
    pub fn argmax(
        &self,
        logits: &CudaView<'_, f32>,
        vocab_size: usize,
        num_rows: usize,
    ) -> Result<Vec<u32>> {
        if num_rows == 0 {
            return Ok(Vec::new());
        }
        if logits.len() < num_rows * vocab_size {
            candle_core::bail!("argmax: {num_rows} rows of {vocab_size} do not fit the logits");
        }
        let vocab = i32::try_from(vocab_size)
            .map_err(|_| candle_core::Error::msg(format!("vocabulary {vocab_size} exceeds i32")))?;
        // SAFETY: the kernel writes one token per row.
        #[allow(unsafe_code)]
        let mut tokens =
            unsafe { self.stream.alloc::<u32>(num_rows) }.map_err(candle_core::Error::wrap)?;
        let mut builder = self.stream.launch_builder(&self.argmax);
        builder.arg(logits).arg(&vocab).arg(&mut tokens);
        let config = LaunchConfig {
            grid_dim: (num_rows as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches `argmax_rows` in sample.cu; the logits hold
        // `num_rows` rows of `vocab_size`.
        #[allow(unsafe_code)]
        unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
        self.stream
            .clone_dtoh(&tokens)
            .map_err(candle_core::Error::wrap)
    }

    /// One token per entry of `rows`, from `logits` (`vocab_size` f32 per row, contiguous).
    pub fn sample(
        &self,
        logits: &CudaView<'_, f32>,
        vocab_size: usize,
        rows: &[RowSampling],
    ) -> Result<Vec<u32>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let num_rows = logits.len() / vocab_size.max(1);
        if let Some(bad) = rows
            .iter()
            .find(|r| r.row < 0 || r.row as usize >= num_rows)
        {
            candle_core::bail!("sampling row {} of {num_rows}", bad.row);
        }
        let vocab = i32::try_from(vocab_size)
            .map_err(|_| candle_core::Error::msg(format!("vocabulary {vocab_size} exceeds i32")))?;
        let stream = &self.stream;
        let params = stream.clone_htod(rows).map_err(candle_core::Error::wrap)?;
        // SAFETY (both): the kernel writes each row's weights before reading them, and every
        // token.
        #[allow(unsafe_code)]
        let mut weights = unsafe { stream.alloc::<f32>(rows.len() * vocab_size) }
            .map_err(candle_core::Error::wrap)?;
        #[allow(unsafe_code)]
        let mut tokens =
            unsafe { stream.alloc::<u32>(rows.len()) }.map_err(candle_core::Error::wrap)?;
        let mut builder = stream.launch_builder(&self.function);
        builder
            .arg(logits)
            .arg(&vocab)
            .arg(&params)
            .arg(&mut weights)
            .arg(&mut tokens);
        let config = LaunchConfig {
            grid_dim: (rows.len() as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches `sample_filtered` in sample.cu; every row index was
        // checked against the logits, the scratch holds `rows.len() * vocab_size` floats.
        #[allow(unsafe_code)]
        unsafe { builder.launch(config) }.map_err(candle_core::Error::wrap)?;
        stream.clone_dtoh(&tokens).map_err(candle_core::Error::wrap)
    }
}
