//! Sampling: logits in, one token (and optionally its log-probabilities) per sequence out.
//!
//! The model runner owns a [`BatchSampler`], which keeps one [`SequenceSamplingState`] per
//! admitted sequence (its parameters, seeded RNG and the tokens its penalties look at) and samples
//! a whole step's logits at once: plain-greedy rows on the tensors' device, the others on the
//! host, in parallel. A seeded request is reproducible whatever else is in the batch.
//!
//! - `batch`: the step's batched sampling, where each row runs.
//! - `state`: what one sequence carries from step to step.
//! - `constrained`: a sequence's grammar matcher and its mask of allowed tokens.
//! - `sampler`: the per-row pipeline (its order: `SequenceSampler`) and the per-thread scratch
//!   buffers.
//! - `penalties`: banned ids, repetition, presence and frequency penalties.
//! - `restrictions`: `allowed_token_ids` and `bad_words`.
//! - `thinking`: a sequence's thinking budget, closing its thinking section when it is spent.
//! - `filters`: top-k (on the logits), softmax weights, top-p, min-p and the draw.
//! - `prune`: exact pruning of the candidates before top-k's and top-p's selections.
//! - `device`: rows sampled where the logits are, on a GPU (plain temperature / top-k / top-p /
//!   min-p rows), by the kernel whose host twin is `thresholds`.
//! - `staging`: where the rows sampled on the host land (page-locked memory on a GPU).
//! - `logprobs`: log-softmax and top-n selection for the logprobs returned to clients.
//! - `verify`: speculative decoding's verification — a sequence's pipeline over its rows, in
//!   order, keeping the proposals its draws agree with.

mod batch;
mod constrained;
mod device;
mod device_rows;
mod filters;
pub mod logprobs;
mod penalties;
mod prune;
mod restrictions;
mod thinking;
mod sampler;
mod staging;
mod state;
mod verify;
#[cfg(any(test, feature = "testing"))]
pub mod thresholds;
#[cfg(any(test, feature = "testing"))]
pub mod reference;

pub use batch::BatchSampler;
#[cfg(feature = "testing")]
pub use device::{DeviceRow, DeviceSampler, RowFilters};
pub use sampler::SampledToken;
#[cfg(feature = "testing")]
pub use {
    logprobs::{log_softmax_into, top_n},
    sampler::{SamplerScratch, SamplingContext, SequenceSampler},
    state::SequenceSamplingState,
};
