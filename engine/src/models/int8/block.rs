//! `QuantBlock`: consecutive rows of an int8 matrix, as the kernels read them.

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
