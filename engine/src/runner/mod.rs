//! `ModelRunner`: owns the model, the KV cache tensors and the sampler; turns a plan into logits
//! and those into tokens. It is the real model's `StepExecutor`.

pub mod executor;
pub mod input;

pub use executor::{StepExecutor, StepOutput};

use crate::attention::{AttnMetadata, PagedKvCache};
use candle_core::Tensor;

use crate::batch::BatchPlan;
#[cfg(any(feature = "testing", feature = "cuda"))]
use crate::batch::StepLogits;
use crate::error::Result;
use crate::models::CausalLm;
use crate::request::{EngineRequest, RequestId};
use crate::sampling::BatchSampler;

#[derive(Debug)]
pub struct ModelRunner {
    model: Box<dyn CausalLm>,
    kv_cache: Box<dyn PagedKvCache>,
    block_size: usize,
    sampler: BatchSampler,
}

impl ModelRunner {
    pub fn new(
        model: Box<dyn CausalLm>,
        kv_cache: Box<dyn PagedKvCache>,
        block_size: usize,
    ) -> Self {
        let sampler = BatchSampler::new(model.config().eos_token_ids.clone());
        Self {
            model,
            kv_cache,
            block_size,
            sampler,
        }
    }

    #[cfg(feature = "testing")]
    pub fn model(&self) -> &dyn CausalLm {
        self.model.as_ref()
    }

    /// Gives the model back (the KV cache is dropped).
    #[cfg(any(feature = "testing", feature = "cuda"))]
    pub fn into_model(self) -> Box<dyn CausalLm> {
        self.model
    }

    /// Runs one step's forward pass; returns one logits row per sequence that samples, in plan
    /// order, copied to the host (for tests and tools that look at logits; serving samples them
    /// where they are, through `StepExecutor::execute`).
    #[cfg(any(feature = "testing", feature = "cuda"))]
    pub fn execute(&mut self, plan: &BatchPlan) -> Result<StepLogits> {
        let vocab_size = self.model.config().vocab_size;
        let values = match self.forward(plan)? {
            Some(logits) => logits.flatten_all()?.to_vec1::<f32>()?,
            None => Vec::new(),
        };
        Ok(StepLogits { vocab_size, values })
    }

    /// The forward pass: `[sampling rows, vocab]` logits on the model's device (`None` for an
    /// empty plan).
    fn forward(&mut self, plan: &BatchPlan) -> Result<Option<Tensor>> {
        if plan.is_empty() {
            return Ok(None);
        }
        let meta =
            AttnMetadata::from_plan(plan, self.block_size, self.model.config().sliding_window);
        let input = input::build_model_input(plan, &meta, self.model.device())?;
        self.kv_cache.begin_step(&meta)?;
        let logits = self.model.forward(&input, &meta, self.kv_cache.as_mut())?;
        Ok(Some(logits))
    }
}

impl StepExecutor for ModelRunner {
    fn execute(&mut self, plan: &BatchPlan) -> Result<StepOutput> {
        let Some(logits) = self.forward(plan)? else {
            return Ok(StepOutput::default());
        };
        let ids: Vec<RequestId> = plan
            .seqs
            .iter()
            .filter(|s| s.sample)
            .map(|s| s.id)
            .collect();
        if ids.is_empty() {
            return Ok(StepOutput::default());
        }
        let tokens = self.sampler.sample(&logits, &ids)?;
        Ok(StepOutput {
            tokens: tokens.into_iter().map(Some).collect(),
        })
    }

    fn add_request(&mut self, request: &EngineRequest, _max_output_tokens: usize) {
        self.sampler.add(request);
    }

    fn release(&mut self, id: RequestId) {
        self.sampler.release(id);
    }
}
