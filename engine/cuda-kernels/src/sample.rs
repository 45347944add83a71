//! Launchers of `kernels/sample.cu`: temperature / top-k / top-p / min-p sampling of chosen logits
//! rows on the GPU, with each row's uniform number drawn on the host, the rows' argmax, and the
//! best token a grammar's mask allows; a row may follow a grammar, whose token mask (one bit per
//! token) is uploaded beside it. Only token ids come back.

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
    /// The row's mask among those passed with it (`-1`: no mask).
    pub mask: i32,
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
    argmax_allowed: CudaFunction,
}

impl SamplingKernel {
    pub fn load(device: &CudaDevice) -> Result<Self> {
        let (stream, module) = load_fatbin(device, SAMPLE_FATBIN)?;
        Ok(Self {
            function: function(&module, "sample_filtered")?,
            argmax: function(&module, "argmax_rows")?,
            argmax_allowed: function(&module, "argmax_allowed_rows")?,
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
        // SAFETY: the argument list matches `argmax_rows` in sample.cu; the logits hold
        // `num_rows` rows of `vocab_size`.
        #[allow(unsafe_code)]
        unsafe { launch_per_row(builder, num_rows) }?;
        self.stream
            .clone_dtoh(&tokens)
            .map_err(candle_core::Error::wrap)
    }

    /// The best token each mask allows in its row: `rows[i]` of `logits` (`vocab_size` f32 per
    /// row, contiguous) under the `i`-th of `masks`, ties to the lowest id.
    pub fn argmax_allowed(
        &self,
        logits: &CudaView<'_, f32>,
        vocab_size: usize,
        rows: &[i32],
        masks: &TokenMasks<'_>,
    ) -> Result<Vec<u32>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let vocab = checked_rows(logits, vocab_size, rows.iter().copied())?;
        masks.check(vocab_size, rows.len())?;
        let stream = &self.stream;
        let device_rows = stream.clone_htod(rows).map_err(candle_core::Error::wrap)?;
        let device_masks = stream
            .clone_htod(masks.words)
            .map_err(candle_core::Error::wrap)?;
        let mask_words = masks.words_per_row_i32()?;
        // SAFETY: the kernel writes one token per row.
        #[allow(unsafe_code)]
        let mut tokens =
            unsafe { stream.alloc::<u32>(rows.len()) }.map_err(candle_core::Error::wrap)?;
        let mut builder = stream.launch_builder(&self.argmax_allowed);
        builder
            .arg(logits)
            .arg(&vocab)
            .arg(&device_rows)
            .arg(&device_masks)
            .arg(&mask_words)
            .arg(&mut tokens);
        // SAFETY: the argument list matches `argmax_allowed_rows` in sample.cu; every row index
        // was checked against the logits and every mask holds `mask_words` words.
        #[allow(unsafe_code)]
        unsafe { launch_per_row(builder, rows.len()) }?;
        stream.clone_dtoh(&tokens).map_err(candle_core::Error::wrap)
    }

    /// One token per entry of `rows`, from `logits` (`vocab_size` f32 per row, contiguous); a
    /// row with `mask ≥ 0` follows the `mask`-th of `masks`.
    pub fn sample(
        &self,
        logits: &CudaView<'_, f32>,
        vocab_size: usize,
        rows: &[RowSampling],
        masks: &TokenMasks<'_>,
    ) -> Result<Vec<u32>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let vocab = checked_rows(logits, vocab_size, rows.iter().map(|r| r.row))?;
        let num_masks = masks.num_rows();
        if let Some(bad) = rows
            .iter()
            .find(|r| r.mask >= 0 && r.mask as usize >= num_masks)
        {
            candle_core::bail!("sampling mask {} of {num_masks}", bad.mask);
        }
        masks.check(vocab_size, num_masks)?;
        let stream = &self.stream;
        let params = stream.clone_htod(rows).map_err(candle_core::Error::wrap)?;
        // One word at least: the kernel's pointer must be valid even when no row has a mask.
        let mask_words_uploaded: &[u32] = if masks.words.is_empty() {
            &[0]
        } else {
            masks.words
        };
        let device_masks = stream
            .clone_htod(mask_words_uploaded)
            .map_err(candle_core::Error::wrap)?;
        let mask_words = masks.words_per_row_i32()?;
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
            .arg(&device_masks)
            .arg(&mask_words)
            .arg(&mut weights)
            .arg(&mut tokens);
        // SAFETY: the argument list matches `sample_filtered` in sample.cu; every row and mask
        // index was checked, the scratch holds `rows.len() * vocab_size` floats.
        #[allow(unsafe_code)]
        unsafe { launch_per_row(builder, rows.len()) }?;
        stream.clone_dtoh(&tokens).map_err(candle_core::Error::wrap)
    }
}

/// Launches `builder`'s kernel with one block of `THREADS` threads per row.
///
/// # Safety
/// The arguments pushed on `builder` must be the kernel's, and valid for `num_rows` blocks.
#[allow(unsafe_code)]
unsafe fn launch_per_row(
    mut builder: candle_core::cuda_backend::cudarc::driver::LaunchArgs<'_>,
    num_rows: usize,
) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: (num_rows as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: as the caller promised.
    unsafe { builder.launch(config) }
        .map(|_| ())
        .map_err(candle_core::Error::wrap)
}

/// Token masks for a launch, one after another: `words_per_row` words each (one bit per token,
/// token `i` at bit `i % 32` of word `i / 32`, as `TokenMask` holds them).
#[derive(Debug, Clone, Copy)]
pub struct TokenMasks<'a> {
    pub words: &'a [u32],
    pub words_per_row: usize,
}

impl TokenMasks<'_> {
    /// No masks (rows without a grammar).
    pub const NONE: TokenMasks<'static> = TokenMasks {
        words: &[],
        words_per_row: 0,
    };

    pub fn num_rows(&self) -> usize {
        self.words
            .len()
            .checked_div(self.words_per_row)
            .unwrap_or(0)
    }

    /// Every mask covers `vocab_size` tokens, and there are `num_rows` of them.
    fn check(&self, vocab_size: usize, num_rows: usize) -> Result<()> {
        if num_rows == 0 {
            return Ok(());
        }
        if self.words_per_row < vocab_size.div_ceil(32)
            || self.words.len() != num_rows * self.words_per_row
        {
            candle_core::bail!(
                "{} mask words ({} a row) for {num_rows} masks of {vocab_size} tokens",
                self.words.len(),
                self.words_per_row
            );
        }
        Ok(())
    }

    fn words_per_row_i32(&self) -> Result<i32> {
        i32::try_from(self.words_per_row).map_err(|_| {
            candle_core::Error::msg(format!("{} mask words exceed i32", self.words_per_row))
        })
    }
}

/// The vocabulary as the kernels take it, once every row index is checked against `logits`.
fn checked_rows(
    logits: &CudaView<'_, f32>,
    vocab_size: usize,
    rows: impl Iterator<Item = i32>,
) -> Result<i32> {
    let num_rows = logits.len() / vocab_size.max(1);
    for row in rows {
        if row < 0 || row as usize >= num_rows {
            candle_core::bail!("sampling row {row} of {num_rows}");
        }
    }
    i32::try_from(vocab_size)
        .map_err(|_| candle_core::Error::msg(format!("vocabulary {vocab_size} exceeds i32")))
}
