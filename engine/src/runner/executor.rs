//! `StepExecutor`: what runs a step's plan. The model runner computes logits; the mock executor
//! (`crate::mock`) chooses tokens on a clock, with no model at all.

use std::time::Instant;

use crate::batch::{BatchPlan, StepLogits};
use crate::error::Result;
use crate::request::{EngineRequest, RequestId};

/// Runs one step's plan. The engine thread owns it and calls it once per step; the scheduler,
/// the KV block accounting, the limits and the events are the same whatever the executor.
pub trait StepExecutor: Send + std::fmt::Debug {
    /// Runs one step; returns one row per sequence that samples (`ScheduledSeq::sample`), in
    /// plan order.
    fn execute(&mut self, plan: &BatchPlan) -> Result<StepOutput>;

    /// A request was admitted; called once, before it first appears in a plan.
    fn add_request(&mut self, _request: &EngineRequest, _max_output_tokens: usize) {}

    /// A request ended (finished, aborted or failed): forget whatever is kept about it.
    fn release(&mut self, _id: RequestId) {}

    /// After a step in which no token was ready and nothing else was computed: when the next
    /// token is due. The engine then waits for commands until that time instead of stepping
    /// again, so it neither spins nor stops listening. `None` (the default): step again at once.
    fn idle_until(&self) -> Option<Instant> {
        None
    }
}

/// An executor's result for one step.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutput {
    /// One logits row per sampling sequence, in plan order; the scheduler samples.
    Logits(StepLogits),
    /// The next token of each sampling sequence, in plan order, already chosen; `None` = that
    /// sequence's token is not ready yet this step (the mock's clock has not reached it).
    Tokens(Vec<Option<u32>>),
}

impl StepOutput {
    /// Rows returned: one per sampling sequence when the executor kept its contract.
    pub fn num_rows(&self) -> usize {
        match self {
            StepOutput::Logits(logits) => logits.num_rows(),
            StepOutput::Tokens(tokens) => tokens.len(),
        }
    }
}

impl From<StepLogits> for StepOutput {
    fn from(logits: StepLogits) -> Self {
        StepOutput::Logits(logits)
    }
}
