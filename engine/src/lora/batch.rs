//! `LoraBatch`: which token rows of a step use which adapter, and the one pass per projection
//! that adds each adapter's contribution to its rows (a gathered matmul per adapter group).
//! A step without adapters has no groups and costs nothing.

use std::sync::Arc;

use candle_core::{Device, Tensor};

use super::adapter::{FusedProjection, LoraAdapter};
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
        for (range, adapter) in row_ranges.iter().zip(row_adapters) {
            let Some(adapter) = adapter else { continue };
            let rows = range.clone().map(|r| r as u32);
            match grouped.iter_mut().find(|(a, _)| a.id == adapter.id) {
                Some((_, group)) => group.extend(rows),
                None => grouped.push((Arc::clone(adapter), rows.collect())),
            }
        }
        let groups = grouped
            .into_iter()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(adapter, rows)| {
                let rows = if rows.len() == num_rows {
                    None
                } else {
                    let len = rows.len();
                    Some(Tensor::from_vec(rows, len, device)?)
                };
                Ok(AdapterRows { adapter, rows })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { groups })
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
        let mut out = base;
        for group in &self.groups {
            let Some(pair) = group.adapter.layer(layer).and_then(|l| l.pair(projection)) else {
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
