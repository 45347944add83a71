//! Sampling: one row of logits in, one token (and optionally its log-probabilities) out.
//!
//! Each sequence owns a [`SequenceSampler`] holding its parameters, its seeded RNG and reusable
//! buffers, so a seeded request is reproducible whatever else is in the batch. The caller passes
//! the sequence's tokens and this step's banned ids in a [`SamplingContext`]; no tensors here.
//!
//! - `sampler`: the per-sequence pipeline, in vLLM's order.
//! - `penalties`: banned ids, repetition, presence and frequency penalties.
//! - `filters`: softmax weights, top-k, top-p, min-p and the draw.
//! - `logprobs`: log-softmax and top-n selection for the logprobs returned to clients.

mod filters;
pub mod logprobs;
mod penalties;
mod sampler;

pub use logprobs::{log_softmax_into, top_n};
pub use sampler::{SampledToken, SamplingContext, SequenceSampler};
