//! `QuantBlock`: consecutive rows of an int8 matrix, as the kernels read them, and
//! `WeightRows`, what the tile and portable kernels need of any weight format's rows.

/// Values per scale.
pub const GROUP_SIZE: usize = 32;

/// `num_rows` consecutive weight rows: `quants` holds `num_rows * cols` values, row-major, and
/// `scales` one f32 per group of [`GROUP_SIZE`] values.
#[derive(Debug, Clone, Copy)]
pub struct QuantBlock<'a> {
    pub quants: &'a [i8],
    pub scales: &'a [f32],
    pub cols: usize,
}

impl<'a> QuantBlock<'a> {
    pub fn num_rows(&self) -> usize {
        self.quants.len() / self.cols.max(1)
    }

    pub fn num_groups(&self) -> usize {
        self.cols / GROUP_SIZE
    }

    /// Row `row`'s values and scales.
    pub fn row(&self, row: usize) -> (&'a [i8], &'a [f32]) {
        let groups = self.num_groups();
        (
            &self.quants[row * self.cols..(row + 1) * self.cols],
            &self.scales[row * groups..(row + 1) * groups],
        )
    }
}

/// Consecutive weight rows of some format, as the tile and portable kernels read them.
pub trait WeightRows: Copy + Sync {
    fn num_rows(&self) -> usize;

    fn cols(&self) -> usize;

    /// Rows `first_row..first_row + num_rows` as f32 into `out` (`num_rows * cols` values).
    fn dequantize_rows(&self, first_row: usize, num_rows: usize, out: &mut [f32]);
}

impl WeightRows for QuantBlock<'_> {
    fn num_rows(&self) -> usize {
        QuantBlock::num_rows(self)
    }

    fn cols(&self) -> usize {
        self.cols
    }

    fn dequantize_rows(&self, first_row: usize, num_rows: usize, out: &mut [f32]) {
        for r in 0..num_rows {
            let (quants, scales) = self.row(first_row + r);
            dequantize_into(quants, scales, &mut out[r * self.cols..]);
        }
    }
}

/// The f32 values of `quants` (whole groups) with their `scales`.
#[inline(always)]
pub fn dequantize_into(quants: &[i8], scales: &[f32], out: &mut [f32]) {
    let (out, _) = out.as_chunks_mut::<GROUP_SIZE>();
    let (quants, _) = quants.as_chunks::<GROUP_SIZE>();
    for ((out, quants), &scale) in out.iter_mut().zip(quants).zip(scales) {
        for lane in 0..GROUP_SIZE {
            out[lane] = quants[lane] as f32 * scale;
        }
    }
}


/// A group's values as int8 codes (`round(v / scale)`, `scale = max |v| / 127`, 0 for a group
/// of zeros) appended to `codes`; returns the scale. Weights and the VNNI format's activations
/// are quantized alike.
pub fn quantize_group(group: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max_abs = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = max_abs / 127.0;
    let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
    codes.extend(group.iter().map(|v| (v * inverse).round().clamp(-127.0, 127.0) as i8));
    scale
}
