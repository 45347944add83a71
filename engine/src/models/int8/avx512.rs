//! The AVX-512 kernel for quantized weights: a register-blocked micro-kernel. Each pass
//! multiplies a tile of up to `MAX_WEIGHT_ROWS` weight rows by up to `MAX_ACTIVATION_ROWS`
//! activation rows, so every dequantized weight vector feeds several FMAs and every activation
//! vector several rows (the dot-product kernel made two loads per FMA; here a tile of 4 × 4 makes
//! one load per two FMAs). Weights are dequantized 16 at a time in registers by their format's
//! [`RegisterRows`] (int8 here, int4 in `models/int4/registers.rs`); activations stay f32.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::block::{QuantBlock, WeightRows, GROUP_SIZE};

/// Weight rows that the AVX-512 kernels dequantize in registers, a group of 32 values at a time.
pub trait RegisterRows: WeightRows {
    /// What one row's group needs for both its halves (its scale, its packed values), loaded
    /// once per group.
    type Group: Copy;

    /// Row `row`'s group `group`.
    ///
    /// # Safety
    /// The CPU runs AVX-512F, and `row` and `group` lie inside the rows.
    unsafe fn group(&self, row: usize, group: usize) -> Self::Group;

    /// Values `16 · half .. 16 · half + 16` of a group (`half` is 0 or 1), as f32.
    ///
    /// # Safety
    /// The CPU runs AVX-512F.
    unsafe fn values16(group: Self::Group, half: usize) -> __m512;
}

impl RegisterRows for QuantBlock<'_> {
    /// The group's first int8 value and its scale, broadcast.
    type Group = (*const i8, __m512);

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn group(&self, row: usize, group: usize) -> Self::Group {
        let quants = self.quants.as_ptr().add(row * self.cols + group * GROUP_SIZE);
        let scale = *self.scales.get_unchecked(row * self.num_groups() + group);
        (quants, _mm512_set1_ps(scale))
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn values16((quants, scale): Self::Group, half: usize) -> __m512 {
        let bytes = _mm_loadu_si128(quants.add(half * 16) as *const __m128i);
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), scale)
    }
}

/// Weight rows per tile.
const MAX_WEIGHT_ROWS: usize = 4;
/// Activation rows per tile: 4 × 4 accumulators, 4 weight vectors, 4 scales and one
/// activation vector fit in AVX-512's 32 registers.
const MAX_ACTIVATION_ROWS: usize = 4;

/// Whether this CPU runs [`rows_avx512`] (and the AVX2 kernel it leaves single rows to).
pub fn available() -> bool {
    is_x86_feature_detected!("avx512f") && super::avx2::available()
}

/// From this many activation rows on, a tile's weight rows are dequantized once into a small
/// f32 buffer (it stays in L1) and every activation tile reads them from there, instead of each
/// tile converting the int8 values again.
const MIN_ACTIVATIONS_FOR_F32_WEIGHTS: usize = 2 * MAX_ACTIVATION_ROWS;
/// Activation rows multiplied against the block's weights before moving on to the next ones
/// (32 rows of up to 1,536 f32 stay in L2 while every weight tile passes over them; 16, 32 and
/// 64 measured within noise of each other, 8 slower).
const ACTIVATION_PANEL: usize = 32;

/// `out[r * m + i] = dot(weights row r, x row i)`; the caller checked [`available`].
pub fn rows_avx512<W: RegisterRows>(rows: W, x: &[f32], m: usize, out: &mut [f32]) {
    let mut dequantized = Vec::new();
    let mut panel_start = 0;
    while panel_start < m {
        let panel_end = (panel_start + ACTIVATION_PANEL).min(m);
        let panel = panel_start..panel_end;
        let mut first_row = 0;
        while first_row < rows.num_rows() {
            let tile_rows = (rows.num_rows() - first_row).min(MAX_WEIGHT_ROWS);
            let weights = if panel.len() >= MIN_ACTIVATIONS_FOR_F32_WEIGHTS {
                dequantized.resize(tile_rows * rows.cols(), 0.0);
                dequantize_rows(rows, first_row, tile_rows, &mut dequantized);
                Weights::F32(&dequantized)
            } else {
                Weights::Registers(rows)
            };
            let mut first_activation = panel.start;
            while first_activation < panel.end {
                let tile_activations = (panel.end - first_activation).min(MAX_ACTIVATION_ROWS);
                let tile = Tile {
                    first_row,
                    first_activation,
                };
                // SAFETY: the caller checked `available()`; the tile lies inside `block`, `x`
                // (`m` rows of `cols`) and `out` (`num_rows` rows of `m`).
                unsafe { dispatch(tile_rows, tile_activations, weights, x, m, tile, out) };
                first_activation += tile_activations;
            }
            first_row += tile_rows;
        }
        panel_start = panel_end;
    }
}

/// Rows `first_row..first_row + num_rows` of `rows` as f32 into `out`, 16 values at a time;
/// the caller checked that the CPU runs AVX-512F.
pub fn dequantize_rows<W: RegisterRows>(rows: W, first_row: usize, num_rows: usize, out: &mut [f32]) {
    assert!(first_row + num_rows <= rows.num_rows() && out.len() >= num_rows * rows.cols());
    // SAFETY: the rows and `out` are checked above; the CPU feature by the caller.
    unsafe { dequantize_in_registers(rows, first_row, num_rows, out) }
}

#[target_feature(enable = "avx512f")]
unsafe fn dequantize_in_registers<W: RegisterRows>(rows: W, first_row: usize, num_rows: usize, out: &mut [f32]) {
    let num_groups = rows.cols() / GROUP_SIZE;
    for r in 0..num_rows {
        for group in 0..num_groups {
            let values = rows.group(first_row + r, group);
            let dst = out.as_mut_ptr().add(r * rows.cols() + group * GROUP_SIZE);
            _mm512_storeu_ps(dst, W::values16(values, 0));
            _mm512_storeu_ps(dst.add(16), W::values16(values, 1));
        }
    }
}

/// A tile's weights: rows dequantized in registers, or the tile's rows already dequantized.
#[derive(Clone, Copy)]
enum Weights<'a, W> {
    Registers(W),
    F32(&'a [f32]),
}

/// Where a tile starts: its first weight row in the block and first activation row.
#[derive(Clone, Copy)]
struct Tile {
    first_row: usize,
    first_activation: usize,
}

/// Calls the tile kernel compiled for this tile's shape (edges are smaller tiles).
#[target_feature(enable = "avx512f")]
unsafe fn dispatch<W: RegisterRows>(
    rows: usize,
    activations: usize,
    weights: Weights<'_, W>,
    x: &[f32],
    m: usize,
    tile: Tile,
    out: &mut [f32],
) {
    macro_rules! shapes {
        ($(($r:literal, $a:literal)),*) => {
            match (rows, activations, weights) {
                $(($r, $a, Weights::Registers(w)) => tile_kernel::<W, $r, $a>(w, x, m, tile, out),)*
                $(($r, $a, Weights::F32(rows)) => tile_kernel_f32::<$r, $a>(rows, x, m, tile, out),)*
                _ => unreachable!("tile shapes are at most {MAX_WEIGHT_ROWS} x {MAX_ACTIVATION_ROWS}"),
            }
        };
    }
    shapes!(
        (1, 1), (1, 2), (1, 3), (1, 4),
        (2, 1), (2, 2), (2, 3), (2, 4),
        (3, 1), (3, 2), (3, 3), (3, 4),
        (4, 1), (4, 2), (4, 3), (4, 4)
    )
}

/// One `R` × `A` tile over the whole row length.
// The register tile is indexed [weight row][activation row] by two loops: clearer than iterators.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn tile_kernel<W: RegisterRows, const R: usize, const A: usize>(
    rows: W,
    x: &[f32],
    m: usize,
    tile: Tile,
    out: &mut [f32],
) {
    let cols = rows.cols();
    let xs = x.as_ptr().add(tile.first_activation * cols);
    let mut acc = [[_mm512_setzero_ps(); A]; R];
    for group in 0..cols / GROUP_SIZE {
        let mut groups = [rows.group(tile.first_row, group); R];
        for r in 1..R {
            groups[r] = rows.group(tile.first_row + r, group);
        }
        for half in 0..2 {
            let offset = group * GROUP_SIZE + half * 16;
            let mut weights = [_mm512_setzero_ps(); R];
            for r in 0..R {
                weights[r] = W::values16(groups[r], half);
            }
            for a in 0..A {
                let activation = _mm512_loadu_ps(xs.add(a * cols + offset));
                for r in 0..R {
                    acc[r][a] = _mm512_fmadd_ps(weights[r], activation, acc[r][a]);
                }
            }
        }
    }
    store(&acc, m, tile, out);
}

/// One `R` × `A` tile over the whole row length, its `R` weight rows already f32 (`rows`,
/// `R * cols` values).
// The register tile is indexed [weight row][activation row] by two loops: clearer than iterators.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn tile_kernel_f32<const R: usize, const A: usize>(
    rows: &[f32],
    x: &[f32],
    m: usize,
    tile: Tile,
    out: &mut [f32],
) {
    let cols = rows.len() / R;
    let weights = rows.as_ptr();
    let xs = x.as_ptr().add(tile.first_activation * cols);
    let mut acc = [[_mm512_setzero_ps(); A]; R];
    for offset in (0..cols).step_by(16) {
        let mut w = [_mm512_setzero_ps(); R];
        for (r, w) in w.iter_mut().enumerate() {
            *w = _mm512_loadu_ps(weights.add(r * cols + offset));
        }
        for a in 0..A {
            let activation = _mm512_loadu_ps(xs.add(a * cols + offset));
            for r in 0..R {
                acc[r][a] = _mm512_fmadd_ps(w[r], activation, acc[r][a]);
            }
        }
    }
    store(&acc, m, tile, out);
}

/// Writes a tile's sums into `out` (`[rows, m]`).
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn store<const R: usize, const A: usize>(acc: &[[__m512; A]; R], m: usize, tile: Tile, out: &mut [f32]) {
    for (r, acc) in acc.iter().enumerate() {
        let row = &mut out[(tile.first_row + r) * m + tile.first_activation..];
        for (a, acc) in acc.iter().enumerate() {
            row[a] = _mm512_reduce_add_ps(*acc);
        }
    }
}
