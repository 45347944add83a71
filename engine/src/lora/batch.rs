//! `LoraBatch`: which token rows of a step use which adapter, and the one pass per projection
//! that adds each adapter's contribution to its rows: on the CPU for steps of few rows, a
//! per-row kernel over all groups at once (`host.rs`); otherwise a gathered matmul per adapter
//! group (the same candle ops on every device). A step without adapters has no groups and costs
//! nothing.

use std::sync::Arc;

use candle_core::{Device, Tensor};

use super::adapter::{FusedProjection, LoraAdapter, LowRankPair};
use super::host::{add_low_rank_terms, MAX_HOST_ROWS};
use crate::error::Result;

/// The rows of one adapter in a step.
#[derive(Debug, Clone)]
struct AdapterRows {
    adapter: Arc<LoraAdapter>,
    /// `[num_rows]` u32 row indices on the model's device; `None` when the group is every row.
    rows: Option<Tensor>,
}

/// A step's adapter groups, in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct LoraBatch {
    groups: Vec<AdapterRows>,
    /// Per token row, the index of its group (`None`: the base model).
    row_groups: Vec<Option<usize>>,
    /// Whether the step is small enough, and on the CPU, for the per-row host kernel.
    on_host: bool,
}

impl LoraBatch {
    /// Groups the rows of a step: `row_adapters[i]` is the adapter of the sequence whose tokens
    /// are rows `row_ranges[i]` (`None`: the base model).
    pub fn new(
        row_ranges: &[std::ops::Range<usize>],
        row_adapters: &[Option<&Arc<LoraAdapter>>],
        num_rows: usize,
        device: &Device,
    ) -> Result<Self> {
        let mut grouped: Vec<(Arc<LoraAdapter>, Vec<u32>)> = Vec::new();
        let mut row_groups = vec![None; num_rows];
        for (range, adapter) in row_ranges.iter().zip(row_adapters) {
            let Some(adapter) = adapter else { continue };
            let index = match grouped.iter().position(|(a, _)| a.id == adapter.id) {
                Some(index) => index,
                None => {
                    grouped.push((Arc::clone(adapter), Vec::new()));
                    grouped.len() - 1
                }
            };
            grouped[index].1.extend(range.clone().map(|r| r as u32));
            for row in range.clone() {
                row_groups[row] = Some(index);
            }
        }
        let on_host = device.is_cpu() && num_rows <= MAX_HOST_ROWS;
        let groups = grouped
            .into_iter()
            .map(|(adapter, rows)| {
                let rows = if on_host || rows.len() == num_rows {
                    None
                } else {
                    let len = rows.len();
                    Some(Tensor::from_vec(rows, len, device)?)
                };
                Ok(AdapterRows { adapter, rows })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            groups,
            row_groups,
            on_host,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Distinct adapters in the step.
    pub fn num_adapters(&self) -> usize {
        self.groups.len()
    }

    /// `base` (`[num_rows, out]`, the base projection of `x`) plus every group's adapter
    /// contribution on its rows, for `projection` of decoder layer `layer`.
    pub fn apply(
        &self,
        layer: usize,
        projection: FusedProjection,
        x: &Tensor,
        base: Tensor,
    ) -> Result<Tensor> {
        if self.groups.is_empty() {
            return Ok(base);
        }
        fn pair_of(
            group: &AdapterRows,
            layer: usize,
            projection: FusedProjection,
        ) -> Option<&LowRankPair> {
            group.adapter.layer(layer).and_then(|l| l.pair(projection))
        }
        if self.on_host {
            let pairs: Vec<_> = self
                .row_groups
                .iter()
                .map(|g| g.and_then(|g| pair_of(&self.groups[g], layer, projection)))
                .collect();
            if pairs.iter().all(Option::is_none) {
                return Ok(base);
            }
            return add_low_rank_terms(x, &base, &pairs);
        }
        let mut out = base;
        for group in &self.groups {
            let Some(pair) = pair_of(group, layer, projection) else {
                continue;
            };
            out = match &group.rows {
                None => (out + pair.delta(x)?)?,
                Some(rows) => {
                    let delta = pair.delta(&x.index_select(rows, 0)?)?;
                    out.index_add(rows, &delta, 0)?
                }
            };
        }
        Ok(out)
    }
}
