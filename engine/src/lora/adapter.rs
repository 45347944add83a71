//! `LoraAdapter`: a loaded adapter, as the model's layers use it — one low-rank pair per fused
//! projection (q/k/v, o, gate/up, down) and layer, the scale folded into `B`, on the model's
//! device in its dtype.

use std::sync::atomic::{AtomicU64, Ordering};

use candle_core::Tensor;

use crate::error::Result;

/// Identifies one load of an adapter: a reload of the same directory gets a new id, so nothing
/// computed with the old weights (cached KV blocks) is ever reused with the new ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoraId(pub u64);

impl LoraId {
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        LoraId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The projections of a decoder layer as the model computes them (q/k/v and gate/up fused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FusedProjection {
    Qkv,
    O,
    GateUp,
    Down,
}

/// `delta = (x · Aᵀ) · (scale·B)ᵀ`, stored transposed and contiguous for two plain matmuls:
/// `a_t` is `[in, rank]`, `b_t` is `[rank, out]`. For a fused projection the parts' `A`s are
/// stacked along the rank and `B` is block-diagonal, so one pair serves q/k/v (or gate/up).
#[derive(Debug, Clone)]
pub struct LowRankPair {
    pub a_t: Tensor,
    pub b_t: Tensor,
    /// The non-zero blocks of `b_t`: one per adapted part, in output order.
    pub parts: Vec<PartBlock>,
}

/// Where one adapted part (q, k, v, gate, …) sits in a fused pair: its rank columns of `a_t`
/// (rows of `b_t`) and its output columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartBlock {
    pub rank_offset: usize,
    pub rank: usize,
    pub out_offset: usize,
    pub out_len: usize,
}

impl LowRankPair {
    /// The stacked rank of all parts.
    pub fn rank(&self) -> usize {
        self.parts.iter().map(|p| p.rank).sum()
    }

    /// The adapter's contribution for the rows `x` (`[num_rows, in]`) → `[num_rows, out]`.
    pub fn delta(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.matmul(&self.a_t)?.matmul(&self.b_t)?)
    }
}

/// One decoder layer's pairs; `None` where the adapter leaves the projection alone.
#[derive(Debug, Clone, Default)]
pub struct LayerAdapter {
    pub qkv: Option<LowRankPair>,
    pub o: Option<LowRankPair>,
    pub gate_up: Option<LowRankPair>,
    pub down: Option<LowRankPair>,
}

impl LayerAdapter {
    pub fn pair(&self, projection: FusedProjection) -> Option<&LowRankPair> {
        match projection {
            FusedProjection::Qkv => self.qkv.as_ref(),
            FusedProjection::O => self.o.as_ref(),
            FusedProjection::GateUp => self.gate_up.as_ref(),
            FusedProjection::Down => self.down.as_ref(),
        }
    }
}

/// A loaded LoRA adapter, shared by every request that uses it (`Arc`): unloading it from a
/// registry lets the requests holding it finish with it.
#[derive(Debug)]
pub struct LoraAdapter {
    pub(crate) id: LoraId,
    pub(crate) name: String,
    pub(crate) rank: usize,
    pub(crate) num_modules: usize,
    pub(crate) layers: Vec<LayerAdapter>,
}

impl LoraAdapter {
    pub fn id(&self) -> LoraId {
        self.id
    }

    /// The name requests select it by (the `model` field).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many (layer, projection) modules it adapts.
    pub fn num_modules(&self) -> usize {
        self.num_modules
    }

    pub(crate) fn layer(&self, index: usize) -> Option<&LayerAdapter> {
        self.layers.get(index)
    }
}

impl PartialEq for LoraAdapter {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}
