//! `VnniMatrix`: CPU weights as 4-bit or 8-bit codes with one f32 scale (and, for 4-bit, one f32
//! offset) per 32 values, interleaved for AVX-512 VNNI, multiplied with activations quantized
//! per 32 values (`vnni/activations.rs`): to int8, as llama.cpp multiplies its Q4/Q8 blocks, or
//! to 15 bits, within ~3·10⁻⁵ of each group's largest value, for answers that follow f32.
//!
//! The f32 kernels (`int8/avx512.rs`) spend about 9 instructions per 32 weights of one row
//! unpacking and multiplying, so a decode step is bound by instructions, not memory, and each
//! extra activation row (a batch, a speculative proposal) costs nearly a full pass. Here one
//! `vpdpbusd` multiplies 64 codes, and the unpacking is shared by every activation row of the
//! tile (`vnni/kernel.rs`). The price of 8-bit activations: results move by about as much as
//! llama.cpp's differ from an f32 model (`WeightFormat::Vnni` says where it is chosen); 15-bit
//! ones take a second `vpdpbusd` per 64 codes and move results ~128 times less.
//!
//! Layout: rows in blocks of 16 (the last padded with zero rows); per block and group of 32
//! columns, chunks of 64 bytes whose 32-bit lane `i` holds 4 codes of row `i`. A 4-bit group is
//! 4 chunks, byte `4c + k` of row `i`'s 16 packed bytes at `c · 64 + 4i + k` (its low nibble is
//! value `4c + k`, its high nibble value `16 + 4c + k`, GGUF's order); an 8-bit group is 8 chunks
//! of value + 128. Per block and group, 16 f32 scales (one per row) and, for 4-bit codes, 16 f32
//! offsets follow in one array, read beside the codes.

use rayon::prelude::*;

mod activations;
#[cfg(target_arch = "x86_64")]
mod kernel;
mod layout;

pub use activations::{ActivationBits, QuantizedActivations};
pub use layout::CodeBits;
use layout::{BlockView, BLOCK_ROWS, CHUNK_BYTES, MAX_ACTIVATION_ROWS};

use super::int4::Int4Matrix;
use super::int8::{common_cols, Int8Matrix, GROUP_SIZE};

/// From this many activation rows on, parallel tasks split the activation rows (each task
/// writes whole output rows) instead of the weight blocks.
const MIN_ROWS_TO_SPLIT_ACTIVATIONS: usize = 16;

/// Activation rows per task when tasks split them: their codes stay in L2 while every weight
/// block passes over them.
const MAX_ROWS_PER_TASK: usize = 64;

/// One row's group as the source format holds it: its bytes (the first `row_bytes()` of
/// `bytes`: 16 for 4-bit codes, 32 for 8-bit), scale and offset.
struct RowGroup {
    bytes: [u8; GROUP_SIZE],
    scale: f32,
    min: f32,
}

/// The first `bytes.len()` bytes of a group, the rest zero.
fn group_bytes(bytes: impl ExactSizeIterator<Item = u8>) -> [u8; GROUP_SIZE] {
    let mut out = [0u8; GROUP_SIZE];
    for (slot, byte) in out.iter_mut().zip(bytes) {
        *slot = byte;
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
pub struct VnniMatrix {
    rows: usize,
    cols: usize,
    bits: CodeBits,
    /// How [`VnniMatrix::matmul`] quantizes the activations.
    activations: ActivationBits,
    codes: Vec<u8>,
    /// Per block and group: the 16 rows' scales, then (4-bit) their 16 offsets.
    factors: Vec<f32>,
}

impl VnniMatrix {
    /// Weight rows per block: one per 32-bit lane of a 512-bit register.
    pub const BLOCK_ROWS: usize = BLOCK_ROWS;

    /// Whether this CPU runs the VNNI kernel (elsewhere [`VnniMatrix::matmul`] runs the same
    /// arithmetic in plain Rust, slowly).
    pub fn fast_here() -> bool {
        #[cfg(target_arch = "x86_64")]
        return kernel::available();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// The 4-bit matrix's codes, scales and offsets, value for value, multiplying activations
    /// quantized to `activations`.
    pub fn from_int4(matrix: &Int4Matrix, activations: ActivationBits) -> Self {
        let (nibbles, scales, mins) = matrix.groups();
        let per_row = matrix.cols() / GROUP_SIZE;
        Self::pack(matrix.rows(), matrix.cols(), (CodeBits::Four, activations), |row, group| {
            let index = row * per_row + group;
            RowGroup {
                bytes: group_bytes(nibbles[index * 16..(index + 1) * 16].iter().copied()),
                scale: scales[index],
                min: mins[index],
            }
        })
    }

    /// The int8 matrix's values and scales, value for value, multiplying activations quantized
    /// to `activations`.
    pub fn from_int8(matrix: &Int8Matrix, activations: ActivationBits) -> Self {
        let (quants, scales) = matrix.groups();
        let per_row = matrix.cols() / GROUP_SIZE;
        Self::pack(matrix.rows(), matrix.cols(), (CodeBits::Eight, activations), |row, group| {
            let index = row * per_row + group;
            let values = &quants[index * GROUP_SIZE..(index + 1) * GROUP_SIZE];
            RowGroup {
                bytes: group_bytes(values.iter().map(|&q| (i16::from(q) + 128) as u8)),
                scale: scales[index],
                min: 0.0,
            }
        })
    }

    /// Interleaves `rows` rows whose groups `row_group(row, group)` gives.
    fn pack(
        rows: usize,
        cols: usize,
        (bits, activations): (CodeBits, ActivationBits),
        row_group: impl Fn(usize, usize) -> RowGroup,
    ) -> Self {
        let num_groups = cols / GROUP_SIZE;
        let num_blocks = rows.div_ceil(BLOCK_ROWS);
        let padding_code = if bits == CodeBits::Eight { 128 } else { 0 };
        let mut codes = vec![padding_code; num_blocks * num_groups * bits.group_bytes()];
        let mut factors = vec![0.0f32; num_blocks * num_groups * bits.group_factors()];
        for row in 0..rows {
            let (block, lane) = (row / BLOCK_ROWS, row % BLOCK_ROWS);
            for group in 0..num_groups {
                let index = block * num_groups + group;
                let source = row_group(row, group);
                let base = index * bits.group_bytes();
                for (j, &byte) in source.bytes[..bits.row_bytes()].iter().enumerate() {
                    codes[base + (j / 4) * CHUNK_BYTES + lane * 4 + j % 4] = byte;
                }
                let at = index * bits.group_factors() + lane;
                factors[at] = source.scale;
                if bits == CodeBits::Four {
                    factors[at + BLOCK_ROWS] = source.min;
                }
            }
        }
        Self { rows, cols, bits, activations, codes, factors }
    }

    /// Row `row`'s group `group` as the source format held it.
    fn row_group(&self, row: usize, group: usize) -> RowGroup {
        let (block, lane) = (row / BLOCK_ROWS, row % BLOCK_ROWS);
        let index = block * (self.cols / GROUP_SIZE) + group;
        let base = index * self.bits.group_bytes();
        let bytes = (0..self.bits.row_bytes()).map(|j| self.codes[base + (j / 4) * CHUNK_BYTES + lane * 4 + j % 4]);
        RowGroup { bytes: group_bytes(bytes), scale: self.scale(index, lane), min: self.min(index, lane) }
    }

    /// Row `lane`'s scale in block-and-group `index`.
    fn scale(&self, index: usize, lane: usize) -> f32 {
        self.factors[index * self.bits.group_factors() + lane]
    }

    /// Row `lane`'s offset in block-and-group `index` (0 for 8-bit codes).
    fn min(&self, index: usize, lane: usize) -> f32 {
        match self.bits {
            CodeBits::Four => self.factors[index * self.bits.group_factors() + BLOCK_ROWS + lane],
            CodeBits::Eight => 0.0,
        }
    }

    /// Stacks matrices with the same columns, code width and activations into one (fused
    /// projections).
    pub fn concat_rows(parts: &[&VnniMatrix]) -> Result<Self, String> {
        let cols = common_cols(parts.iter().map(|p| p.cols))?;
        let bits = parts.first().map_or(CodeBits::Eight, |p| p.bits);
        if parts.iter().any(|p| p.bits != bits) {
            return Err("cannot stack 4-bit and 8-bit matrices".into());
        }
        let activations = parts.first().map_or(ActivationBits::Eight, |p| p.activations);
        if parts.iter().any(|p| p.activations != activations) {
            return Err("cannot stack matrices that quantize activations differently".into());
        }
        let sources: Vec<(usize, usize)> = parts
            .iter()
            .enumerate()
            .flat_map(|(part, p)| (0..p.rows).map(move |row| (part, row)))
            .collect();
        Ok(Self::pack(sources.len(), cols, (bits, activations), |row, group| {
            let (part, row) = sources[row];
            parts[part].row_group(row, group)
        }))
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// How this matrix's products quantize their activations.
    pub fn activation_bits(&self) -> ActivationBits {
        self.activations
    }

    /// Block `block`'s codes and factors, as the kernel reads them.
    #[cfg(target_arch = "x86_64")]
    fn block_view(&self, block: usize) -> BlockView<'_> {
        let num_groups = self.cols / GROUP_SIZE;
        let (codes, factors) = (self.bits.group_bytes() * num_groups, self.bits.group_factors() * num_groups);
        BlockView {
            codes: &self.codes[block * codes..(block + 1) * codes],
            factors: &self.factors[block * factors..(block + 1) * factors],
            bits: self.bits,
            num_groups,
        }
    }

    fn padded_rows(&self) -> usize {
        self.rows.div_ceil(BLOCK_ROWS) * BLOCK_ROWS
    }

    /// The f32 values the codes stand for, row-major.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut values = Vec::with_capacity(self.rows * self.cols);
        for row in 0..self.rows {
            for group in 0..self.cols / GROUP_SIZE {
                let source = self.row_group(row, group);
                let bytes = &source.bytes[..self.bits.row_bytes()];
                values.extend(group_values(self.bits, bytes).map(|q| q * source.scale + source.min));
            }
        }
        values
    }

    /// `x` is `[m, cols]` row-major; returns `x · selfᵀ` as `[m, rows]`, the activations
    /// quantized per 32 values first, to [`VnniMatrix::activation_bits`].
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        debug_assert_eq!(x.len(), m * self.cols);
        self.matmul_quantized(&QuantizedActivations::quantize_to(x, self.cols, self.activations))
    }

    /// `x · selfᵀ` as `[m, rows]` for already quantized activations.
    pub fn matmul_quantized(&self, x: &QuantizedActivations) -> Vec<f32> {
        let (m, rows) = (x.num_rows(), self.rows);
        let mut out = vec![0.0f32; m * rows];
        let num_blocks = self.padded_rows() / BLOCK_ROWS;
        let num_tasks = 2 * rayon::current_num_threads();
        if m >= MIN_ROWS_TO_SPLIT_ACTIVATIONS {
            let rows_per_task = m.div_ceil(num_tasks).min(MAX_ROWS_PER_TASK);
            out.par_chunks_mut(rows_per_task * rows).enumerate().for_each(|(task, out)| {
                let first = task * rows_per_task;
                let count = out.len() / rows;
                self.blocks_into(x, (first, count), 0..num_blocks, out);
            });
            return out;
        }
        let blocks_per_task = num_blocks.div_ceil(num_tasks).max(1);
        let parts: Vec<Vec<f32>> = (0..num_blocks.div_ceil(blocks_per_task))
            .into_par_iter()
            .map(|task| {
                let blocks = task * blocks_per_task..((task + 1) * blocks_per_task).min(num_blocks);
                let width = (blocks.end * BLOCK_ROWS).min(rows) - blocks.start * BLOCK_ROWS;
                let mut part = vec![0.0f32; m * width];
                self.blocks_into(x, (0, m), blocks, &mut part);
                part
            })
            .collect();
        for (task, part) in parts.iter().enumerate() {
            let first_col = task * blocks_per_task * BLOCK_ROWS;
            let width = part.len() / m.max(1);
            for a in 0..m {
                out[a * rows + first_col..][..width].copy_from_slice(&part[a * width..][..width]);
            }
        }
        out
    }

    /// Rows `first_row..first_row + num_rows` (`first_row` at a block's start) of `x · selfᵀ`,
    /// as `[num_rows, m]` into `out` (the grouped matmul's layout).
    pub fn rows_transposed_into(&self, (first_row, num_rows): (usize, usize), x: &QuantizedActivations, out: &mut [f32]) {
        assert!(first_row.is_multiple_of(BLOCK_ROWS) && first_row + num_rows <= self.rows);
        let m = x.num_rows();
        let mut tile = [0.0f32; BLOCK_ROWS * MAX_ACTIVATION_ROWS];
        for block in first_row / BLOCK_ROWS..(first_row + num_rows).div_ceil(BLOCK_ROWS) {
            for first in (0..m).step_by(MAX_ACTIVATION_ROWS) {
                let count = (m - first).min(MAX_ACTIVATION_ROWS);
                self.block_tile(block, x, first, count, &mut tile);
                for lane in 0..BLOCK_ROWS {
                    let row = block * BLOCK_ROWS + lane - first_row;
                    if row < num_rows {
                        for a in 0..count {
                            out[row * m + first + a] = tile[a * BLOCK_ROWS + lane];
                        }
                    }
                }
            }
        }
    }

    /// Blocks `blocks` times activation rows `first..first + count` into `out`, `[count,
    /// width]` where `width` is the blocks' real rows.
    fn blocks_into(&self, x: &QuantizedActivations, (first, count): (usize, usize), blocks: std::ops::Range<usize>, out: &mut [f32]) {
        let first_col = blocks.start * BLOCK_ROWS;
        let width = (blocks.end * BLOCK_ROWS).min(self.rows) - first_col;
        let mut tile = [0.0f32; BLOCK_ROWS * MAX_ACTIVATION_ROWS];
        for block in blocks {
            let mut a = 0;
            while a < count {
                let rows_here = (count - a).min(MAX_ACTIVATION_ROWS);
                self.block_tile(block, x, first + a, rows_here, &mut tile);
                let col = block * BLOCK_ROWS - first_col;
                let real = (self.rows - block * BLOCK_ROWS).min(BLOCK_ROWS);
                for r in 0..rows_here {
                    out[(a + r) * width + col..][..real].copy_from_slice(&tile[r * BLOCK_ROWS..][..real]);
                }
                a += rows_here;
            }
        }
    }

    /// One block's 16 outputs for up to `MAX_ACTIVATION_ROWS` activation rows, by the kernel where
    /// the CPU runs it.
    fn block_tile(&self, block: usize, x: &QuantizedActivations, first: usize, count: usize, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if kernel::available() {
            return kernel::block_tile(self.block_view(block), x, first, count, out);
        }
        for a in 0..count {
            self.block_row_portable(block, x, first + a, &mut out[a * BLOCK_ROWS..][..BLOCK_ROWS]);
        }
    }

    /// The kernel's arithmetic for one activation row in plain Rust, in its order (the same
    /// bits).
    fn block_row_portable(&self, block: usize, x: &QuantizedActivations, row: usize, out: &mut [f32]) {
        let num_groups = self.cols / GROUP_SIZE;
        for (lane, out) in out.iter_mut().enumerate() {
            let mut sum = 0.0f32;
            for group in 0..num_groups {
                let source = self.row_group(block * BLOCK_ROWS + lane, group);
                let bytes = &source.bytes[..self.bits.row_bytes()];
                let start = row * x.cols + group * GROUP_SIZE;
                let dot: i32 = group_codes(self.bits, bytes).zip(start..).map(|(q, i)| q * x.code(i)).sum();
                let index = block * num_groups + group;
                let (x_scale, code_sum) = (x.scales[row * num_groups + group], x.code_sums[row * num_groups + group]);
                let both = self.scale(index, lane) * x_scale;
                sum = match self.bits {
                    CodeBits::Four => {
                        let min = self.min(index, lane);
                        let sum = (dot as f32).mul_add(both, sum);
                        min.mul_add(x_scale * code_sum as f32, sum)
                    }
                    CodeBits::Eight => ((dot - 128 * code_sum) as f32).mul_add(both, sum),
                };
            }
            *out = sum;
        }
    }
}

/// A group's codes in value order (4-bit: the low nibbles are values 0–15, the high 16–31).
fn group_codes(bits: CodeBits, bytes: &[u8]) -> impl Iterator<Item = i32> + '_ {
    let (low, high): (Vec<i32>, Vec<i32>) = match bits {
        CodeBits::Four => (
            bytes.iter().map(|b| i32::from(b & 0x0F)).collect(),
            bytes.iter().map(|b| i32::from(b >> 4)).collect(),
        ),
        CodeBits::Eight => (bytes.iter().map(|&b| i32::from(b)).collect(), Vec::new()),
    };
    low.into_iter().chain(high)
}

/// A group's values without its scale and offset (8-bit: the int8 value).
fn group_values(bits: CodeBits, bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    let shift = if bits == CodeBits::Eight { 128 } else { 0 };
    group_codes(bits, bytes).map(move |q| (q - shift) as f32)
}

#[cfg(test)]
#[path = "vnni_tests.rs"]
mod tests;
