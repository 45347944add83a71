//! The rows a step decides where the logits are, beyond the plain argmax: which rows (a row that
//! nothing but its filters and perhaps a grammar shapes), each random row's uniform number from
//! its sequence's generator, the kernels' calls (a grammar's mask uploaded with its row), and the
//! chosen tokens handed back to their sequences, whose grammars advance past them.
//!
//! The kernels are behind [`RowKernels`]: the GPU's (`DeviceSampler`), and in the tests their host
//! twins (`thresholds.rs`), so that the routing is tested on every machine.

use candle_core::Tensor;

use super::device::{DeviceRow, DeviceSampler, RowFilters};
use super::sampler::SampledToken;
use super::state::{DeviceChoice, SequenceSamplingState};
use crate::constraint::TokenMask;
use crate::error::{EngineError, Result};

/// The two kernels a step's device rows take.
pub(super) trait RowKernels {
    /// For each `(row, mask)`, the best token `mask` allows in that row of `logits`.
    fn argmax_allowed(&mut self, logits: &Tensor, rows: &[(usize, &TokenMask)]) -> Result<Vec<u32>>;
    /// One draw per entry of `rows`.
    fn sample(&mut self, logits: &Tensor, rows: &[DeviceRow<'_>]) -> Result<Vec<u32>>;
}

impl RowKernels for DeviceSampler {
    fn argmax_allowed(&mut self, logits: &Tensor, rows: &[(usize, &TokenMask)]) -> Result<Vec<u32>> {
        DeviceSampler::argmax_allowed(self, logits, rows)
    }

    fn sample(&mut self, logits: &Tensor, rows: &[DeviceRow<'_>]) -> Result<Vec<u32>> {
        DeviceSampler::sample(self, logits, rows)
    }
}

/// Decides every undecided row the device can (`tokens[row]` still `None`): greedy rows with a
/// grammar by the masked argmax, random rows by one draw each. Other rows stay `None`.
pub(super) fn decide_on_device(
    logits: &Tensor,
    states: &mut [SequenceSamplingState],
    tokens: &mut [Option<SampledToken>],
    kernels: &mut impl RowKernels,
) -> Result<()> {
    let mut greedy: Vec<usize> = Vec::new();
    let mut draws: Vec<(usize, RowFilters, f64)> = Vec::new();
    for (row, state) in states.iter_mut().enumerate() {
        if tokens[row].is_some() {
            continue;
        }
        match state.device_choice() {
            Some(DeviceChoice::Greedy) => greedy.push(row),
            Some(DeviceChoice::Draw(filters)) => draws.push((row, filters, state.draw_uniform())),
            None => {}
        }
    }
    let greedy_tokens = if greedy.is_empty() {
        Vec::new()
    } else {
        let rows = greedy
            .iter()
            .map(|&row| {
                let mask = states[row].device_mask().ok_or_else(|| {
                    EngineError::Execution(format!("row {row}: a greedy device row without its mask"))
                })?;
                Ok((row, mask))
            })
            .collect::<Result<Vec<(usize, &TokenMask)>>>()?;
        kernels.argmax_allowed(logits, &rows)?
    };
    let drawn_tokens = if draws.is_empty() {
        Vec::new()
    } else {
        let rows: Vec<DeviceRow<'_>> = draws
            .iter()
            .map(|&(row, filters, uniform)| DeviceRow {
                row,
                filters,
                uniform,
                allowed: states[row].device_mask(),
            })
            .collect();
        kernels.sample(logits, &rows)?
    };
    let rows = greedy.iter().copied().chain(draws.iter().map(|&(row, _, _)| row));
    for (row, token_id) in rows.zip(greedy_tokens.into_iter().chain(drawn_tokens)) {
        tokens[row] = Some(states[row].take_chosen(token_id));
    }
    Ok(())
}

#[cfg(test)]
#[path = "device_rows_tests.rs"]
mod tests;
