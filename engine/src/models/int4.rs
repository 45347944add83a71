//! CPU weights as 4-bit integers with one f32 scale and one f32 offset per 32 values
//! (`w = scale · q + min`, `q` in 0..=15): GGUF's Q4_0, Q4_1 and Q4_K blocks, held exactly as the
//! file has them, at 0.625 bytes a weight (int8's 1.125).
//!
//! Decoding reads every weight once per step, so fewer bytes are a faster step: on AVX-512 the
//! int8 module's register-blocked tiles read these rows too, unpacking 16 values at a time in
//! registers (`int4/registers.rs`), with f32 activations; from `min_rows_for_dense_matmul` rows on
//! (prefill) the whole matrix is unpacked for the dense matmul, as for int8. Without AVX-512 the
//! portable kernel runs them, slower than int8's AVX2 kernel, so the `auto` weight format keeps
//! 4-bit blocks only where [`Int4Matrix::fast_here`].

use candle_core::quantized::GgmlDType;
use half::f16;
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
mod registers;

use super::int8::{common_cols, stacked, KernelKind, QuantizedRows, WeightRows, GROUP_SIZE};

/// Bytes of packed values per group: two 4-bit values a byte.
const NIBBLE_BYTES: usize = GROUP_SIZE / 2;
/// Values and bytes of one Q4_K block: two f16 factors, 12 bytes of sub-block scales, 128 of
/// values.
const Q4K_BLOCK_VALUES: usize = 256;
const Q4K_BLOCK_BYTES: usize = 4 + 12 + Q4K_BLOCK_VALUES / 2;

/// A little-endian f16 at the start of `bytes`, as f32.
fn half(bytes: &[u8]) -> f32 {
    f16::from_le_bytes([bytes[0], bytes[1]]).to_f32()
}

/// Sub-block `group`'s 6-bit scale and offset from a Q4_K block's 12 packed bytes: sub-blocks
/// 0–3 have theirs in the low 6 bits of bytes 0–3 and 4–7; sub-blocks 4–7 take their low 4 bits
/// from bytes 8–11 (scale in the low nibble, offset in the high) and their top 2 bits from the
/// spare top bits of bytes 0–3 (scales) and 4–7 (offsets).
fn q4k_scale_and_min(group: usize, packed: &[u8]) -> (u8, u8) {
    if group < 4 {
        (packed[group] & 63, packed[group + 4] & 63)
    } else {
        let low = packed[group + 4];
        (
            (low & 0x0F) | ((packed[group - 4] >> 6) << 4),
            (low >> 4) | ((packed[group] >> 6) << 4),
        )
    }
}

/// A `[rows, cols]` weight matrix, row-major, in groups of 32 columns. Within a group, byte `j`
/// holds value `j` in its low nibble and value `j + 16` in its high nibble (GGUF's order).
#[derive(Debug, Clone, PartialEq)]
pub struct Int4Matrix {
    rows: usize,
    cols: usize,
    nibbles: Vec<u8>,
    scales: Vec<f32>,
    mins: Vec<f32>,
}

impl Int4Matrix {
    /// Whether [`Int4Matrix::from_gguf_blocks`] takes blocks of this type.
    pub fn takes(dtype: GgmlDType) -> bool {
        matches!(dtype, GgmlDType::Q4_0 | GgmlDType::Q4_1 | GgmlDType::Q4K)
    }

    /// The matrix a GGUF tensor of Q4_0, Q4_1 or Q4_K blocks holds (`bytes`, row-major
    /// `[rows, cols]`), value for value: Q4_K's sub-blocks of 32 have a 6-bit scale and offset
    /// under the block's two f16 factors, whose products are exact in f32.
    pub fn from_gguf_blocks(dtype: GgmlDType, bytes: &[u8], rows: usize, cols: usize) -> Result<Self, String> {
        let (block_bytes, block_values) = match dtype {
            GgmlDType::Q4_0 => (2 + NIBBLE_BYTES, GROUP_SIZE),
            GgmlDType::Q4_1 => (4 + NIBBLE_BYTES, GROUP_SIZE),
            GgmlDType::Q4K => (Q4K_BLOCK_BYTES, Q4K_BLOCK_VALUES),
            other => {
                return Err(format!("int4 weights come from Q4_0, Q4_1 or Q4_K blocks, not {other:?}"))
            }
        };
        let num_blocks = rows * cols / block_values;
        if !cols.is_multiple_of(block_values) || bytes.len() != num_blocks * block_bytes {
            return Err(format!(
                "a {rows}x{cols} {dtype:?} tensor needs {} bytes in blocks of {block_values}, not {}",
                num_blocks * block_bytes,
                bytes.len()
            ));
        }
        let num_groups = rows * cols / GROUP_SIZE;
        let mut matrix = Self {
            rows,
            cols,
            nibbles: Vec::with_capacity(num_groups * NIBBLE_BYTES),
            scales: Vec::with_capacity(num_groups),
            mins: Vec::with_capacity(num_groups),
        };
        for block in bytes.chunks_exact(block_bytes) {
            match dtype {
                // Q4_0: w = scale · (q − 8).
                GgmlDType::Q4_0 => {
                    let scale = half(block);
                    matrix.push_group(scale, -8.0 * scale, &block[2..]);
                }
                GgmlDType::Q4_1 => matrix.push_group(half(block), half(&block[2..]), &block[4..]),
                _ => matrix.push_q4k_block(block),
            }
        }
        Ok(matrix)
    }

    fn push_group(&mut self, scale: f32, min: f32, nibbles: &[u8]) {
        self.scales.push(scale);
        self.mins.push(min);
        self.nibbles.extend_from_slice(&nibbles[..NIBBLE_BYTES]);
    }

    /// A Q4_K block: f16 `d` and `dmin`, 12 bytes of 6-bit sub-block scales and offsets, then
    /// 128 bytes of values, each 32 bytes holding two sub-blocks (low nibbles, then high).
    /// Sub-block `g` is `d · scale_g · q − dmin · min_g`.
    fn push_q4k_block(&mut self, block: &[u8]) {
        let (d, dmin) = (half(block), half(&block[2..]));
        let (packed_scales, values) = (&block[4..16], &block[16..]);
        for group in 0..Q4K_BLOCK_VALUES / GROUP_SIZE {
            let (scale, min) = q4k_scale_and_min(group, packed_scales);
            let pair = &values[GROUP_SIZE * (group / 2)..GROUP_SIZE * (group / 2 + 1)];
            let shift = 4 * (group % 2);
            let value = |k: usize| (pair[k] >> shift) & 0x0F;
            let nibbles: [u8; NIBBLE_BYTES] = std::array::from_fn(|j| value(j) | value(j + NIBBLE_BYTES) << 4);
            self.push_group(d * f32::from(scale), -(dmin * f32::from(min)), &nibbles);
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The packed values (16 bytes per group), scales and offsets, group after group.
    pub(super) fn groups(&self) -> (&[u8], &[f32], &[f32]) {
        (&self.nibbles, &self.scales, &self.mins)
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The f32 values the 4-bit ones stand for, row-major.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut values = vec![0.0f32; self.rows * self.cols];
        let rows_per_task = 64;
        values
            .par_chunks_mut(self.cols.max(1) * rows_per_task)
            .enumerate()
            .for_each(|(task, out)| {
                let first_row = task * rows_per_task;
                let num_rows = out.len() / self.cols.max(1);
                self.block(first_row, num_rows).dequantize_rows(0, num_rows, out);
            });
        values
    }

    /// Rows `first_row..first_row + num_rows` as the kernels read them.
    fn block(&self, first_row: usize, num_rows: usize) -> Int4Block<'_> {
        let groups = self.cols / GROUP_SIZE;
        let (start, end) = (first_row * groups, (first_row + num_rows) * groups);
        Int4Block {
            nibbles: &self.nibbles[start * NIBBLE_BYTES..end * NIBBLE_BYTES],
            scales: &self.scales[start..end],
            mins: &self.mins[start..end],
            cols: self.cols,
        }
    }

    /// Stacks matrices with the same columns into one (fused projections).
    pub fn concat_rows(parts: &[&Int4Matrix]) -> Result<Self, String> {
        Ok(Self {
            rows: parts.iter().map(|p| p.rows).sum(),
            cols: common_cols(parts.iter().map(|p| p.cols))?,
            nibbles: stacked(parts, |p| &p.nibbles),
            scales: stacked(parts, |p| &p.scales),
            mins: stacked(parts, |p| &p.mins),
        })
    }


    /// Whether this CPU runs the int4 rows on the AVX-512 tiles, where they decode faster than
    /// int8 (docs/PERFORMANCE.md § int4 weights); elsewhere int8's kernels are faster.
    pub fn fast_here() -> bool {
        #[cfg(target_arch = "x86_64")]
        return KernelKind::detected() == KernelKind::Avx512;
        #[cfg(not(target_arch = "x86_64"))]
        false
    }
}

impl QuantizedRows for Int4Matrix {
    fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    fn rows_into(&self, kind: KernelKind, (first_row, num_rows): (usize, usize), x: &[f32], m: usize, out: &mut [f32]) {
        let block = self.block(first_row, num_rows);
        match kind {
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx512 => super::int8::rows_avx512(block, x, m, out),
            _ => super::int8::rows_portable(block, x, m, out),
        }
    }
}

/// `num_rows` consecutive rows of an [`Int4Matrix`].
#[derive(Debug, Clone, Copy)]
pub struct Int4Block<'a> {
    nibbles: &'a [u8],
    scales: &'a [f32],
    mins: &'a [f32],
    cols: usize,
}

impl WeightRows for Int4Block<'_> {
    fn num_rows(&self) -> usize {
        self.scales.len() / (self.cols / GROUP_SIZE).max(1)
    }

    fn cols(&self) -> usize {
        self.cols
    }

    fn dequantize_rows(&self, first_row: usize, num_rows: usize, out: &mut [f32]) {
        let groups_per_row = self.cols / GROUP_SIZE;
        let groups = first_row * groups_per_row..(first_row + num_rows) * groups_per_row;
        #[cfg(target_arch = "x86_64")]
        if KernelKind::Avx512.runs_here() {
            return super::int8::dequantize_rows_avx512(*self, first_row, num_rows, out);
        }
        let packed = &self.nibbles[groups.start * NIBBLE_BYTES..groups.end * NIBBLE_BYTES];
        unpack_groups_portable(packed, &self.scales[groups.clone()], &self.mins[groups], out);
    }
}

/// [`WeightRows::dequantize_rows`] of an [`Int4Block`] in plain Rust: `out[g * 32 + j]` for
/// every group `g` of `packed` (16 bytes each) with its scale and offset.
fn unpack_groups_portable(packed: &[u8], scales: &[f32], mins: &[f32], out: &mut [f32]) {
    let (out, _) = out.as_chunks_mut::<GROUP_SIZE>();
    let (packed, _) = packed.as_chunks::<NIBBLE_BYTES>();
    for ((out, bytes), (&scale, &min)) in out.iter_mut().zip(packed).zip(scales.iter().zip(mins)) {
        for j in 0..NIBBLE_BYTES {
            out[j] = (bytes[j] & 0x0F) as f32 * scale + min;
            out[j + NIBBLE_BYTES] = (bytes[j] >> 4) as f32 * scale + min;
        }
    }
}

#[cfg(test)]
#[path = "int4_tests.rs"]
mod tests;
