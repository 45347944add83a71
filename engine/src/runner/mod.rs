//! `ModelRunner`: owns the model and the KV cache tensors; turns a plan into logits. It is the
//! real model's `StepExecutor`.

pub mod executor;
pub mod input;

pub use executor::{StepExecutor, StepOutput};

use crate::attention::{AttnMetadata, PagedKvCache};
use crate::batch::{BatchPlan, StepLogits};
use crate::error::Result;
use crate::models::CausalLm;

#[derive(Debug)]
pub struct ModelRunner {
    model: Box<dyn CausalLm>,
    kv_cache: Box<dyn PagedKvCache>,
    block_size: usize,
}

impl ModelRunner {
    pub fn new(
        model: Box<dyn CausalLm>,
        kv_cache: Box<dyn PagedKvCache>,
        block_size: usize,
    ) -> Self {
        Self {
            model,
            kv_cache,
            block_size,
        }
    }

    pub fn model(&self) -> &dyn CausalLm {
        self.model.as_ref()
    }

    /// Gives the model back (the KV cache is dropped).
    pub fn into_model(self) -> Box<dyn CausalLm> {
        self.model
    }

    /// Runs one step; returns one logits row per sequence that samples, in plan order. (Through
    /// `StepExecutor::execute`, the same rows come wrapped in `StepOutput::Logits`.)
    pub fn execute(&mut self, plan: &BatchPlan) -> Result<StepLogits> {
        let vocab_size = self.model.config().vocab_size;
        if plan.is_empty() {
            return Ok(StepLogits {
                vocab_size,
                values: Vec::new(),
            });
        }
        let meta =
            AttnMetadata::from_plan(plan, self.block_size, self.model.config().sliding_window);
        let input = input::build_model_input(plan, &meta, self.model.device())?;
        self.kv_cache.begin_step(&meta)?;
        let logits = self.model.forward(&input, &meta, self.kv_cache.as_mut())?;
        let values = logits.flatten_all()?.to_vec1::<f32>()?;
        Ok(StepLogits { vocab_size, values })
    }
}

impl StepExecutor for ModelRunner {
    fn execute(&mut self, plan: &BatchPlan) -> Result<StepOutput> {
        ModelRunner::execute(self, plan).map(StepOutput::Logits)
    }
}
