//! `LoraBatch`: which token rows of a step use which adapter, and the one pass per projection
//! that adds each adapter's contribution to its rows: on the CPU, a kernel that reads each
//! adapter's weights once per block of its rows (`host.rs`); on other devices a gathered
//! matmul per adapter group (candle ops). A step without adapters has no groups and costs
//! nothing.

use std::sync::Arc;

use candle_core::{Device, Tensor};

use super::adapter::{FusedProjection, LoraAdapter, LowRankPair};
use super::host::{add_low_rank_terms, HostGroup};
use crate::error::Result;

/// The rows of one adapter in a step.
#[derive(Debug, Clone)]
struct AdapterRows {
    adapter: Arc<LoraAdapter>,
    /// Its token rows, in order.
    row_list: Vec<usize>,
    /// The same as `[num_rows]` u32 indices on the model's device, for the tensor path; `None`
    /// when the group is every row or the step runs on the host kernel.
    rows: Option<Tensor>,
}

/// A step's adapter groups, in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct LoraBatch {
    groups: Vec<AdapterRows>,
    /// Whether the step runs on the CPU, where the host kernel serves it.
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
        Self::build(row_ranges, row_adapters, num_rows, device, device.is_cpu())
    }

    /// `new`, with the host kernel or the tensor path chosen (tests compare the two).
    pub(crate) fn build(
        row_ranges: &[std::ops::Range<usize>],
        row_adapters: &[Option<&Arc<LoraAdapter>>],
        num_rows: usize,
        device: &Device,
        on_host: bool,
    ) -> Result<Self> {
        let mut grouped: Vec<(Arc<LoraAdapter>, Vec<usize>)> = Vec::new();
        for (range, adapter) in row_ranges.iter().zip(row_adapters) {
            let Some(adapter) = adapter else { continue };
            match grouped.iter_mut().find(|(a, _)| a.id == adapter.id) {
                Some((_, rows)) => rows.extend(range.clone()),
                None => grouped.push((Arc::clone(adapter), range.clone().collect())),
            }
        }
        let groups = grouped
            .into_iter()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(adapter, row_list)| {
                let rows = if on_host || row_list.len() == num_rows {
                    None
                } else {
                    let indices: Vec<u32> = row_list.iter().map(|&r| r as u32).collect();
                    Some(Tensor::from_vec(indices, row_list.len(), device)?)
                };
                Ok(AdapterRows {
                    adapter,
                    row_list,
                    rows,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { groups, on_host })
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
            let groups: Vec<HostGroup<'_>> = self
                .groups
                .iter()
                .filter_map(|g| {
                    pair_of(g, layer, projection).map(|pair| HostGroup {
                        pair,
                        rows: &g.row_list,
                    })
                })
                .collect();
            if groups.is_empty() {
                return Ok(base);
            }
            return add_low_rank_terms(x, &base, &groups);
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
