//! `ModelRunner`: owns the model, the KV cache tensors and the sampler; turns a plan into logits
//! and those into tokens. It is the real model's `StepExecutor`.

pub mod draft;
pub mod executor;
mod forward;
pub mod input;
mod polling;
mod prompt_logprobs;

pub use executor::{StepExecutor, StepOutput};

use crate::attention::PagedKvCache;
use candle_core::Tensor;

use crate::batch::BatchPlan;
#[cfg(any(feature = "testing", feature = "cuda"))]
use crate::batch::StepLogits;
use crate::error::Result;
use crate::models::CausalLm;
use crate::request::{EngineRequest, RequestId};
use crate::sampling::BatchSampler;
use draft::DraftModel;
use forward::forward;

#[derive(Debug)]
pub struct ModelRunner {
    model: Box<dyn CausalLm>,
    kv_cache: Box<dyn PagedKvCache>,
    block_size: usize,
    sampler: BatchSampler,
    /// Speculative decoding's draft model, which fills the plan's reserved proposal rows.
    draft: Option<DraftModel>,
}

impl ModelRunner {
    pub fn new(
        model: Box<dyn CausalLm>,
        kv_cache: Box<dyn PagedKvCache>,
        block_size: usize,
    ) -> Self {
        let config = model.config();
        let sampler = BatchSampler::new(config.eos_token_ids.clone(), config.vocab_size);
        Self {
            model,
            kv_cache,
            block_size,
            sampler,
            draft: None,
        }
    }

    /// Proposals come from `draft` (speculative decoding with a draft model).
    pub fn with_draft(mut self, draft: DraftModel) -> Self {
        self.draft = Some(draft);
        self
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
    /// order (then the prompt log-probability rows, if any), copied to the host (for tests and tools that look at logits; serving samples them
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
        forward(self.model.as_ref(), self.kv_cache.as_mut(), self.block_size, plan)
    }

    /// The forward pass, with the grammar masks of the step's constrained sequences computed
    /// meanwhile as a job on the engine's rayon pool (an idle worker takes it while the model's
    /// kernels run; as in vLLM, the masks overlap the forward pass).
    fn forward_and_masks(&mut self, plan: &BatchPlan, ids: &[RequestId]) -> Result<Option<Tensor>> {
        if !self.sampler.any_constrained(ids) {
            return self.forward(plan);
        }
        let sampler = &mut self.sampler;
        let block_size = self.block_size;
        let (model, kv_cache) = (self.model.as_ref(), self.kv_cache.as_mut());
        // A panic in the mask job resurfaces at the end of the scope, inside the step guard.
        rayon::in_place_scope(|scope| {
            scope.spawn(|_| sampler.prepare_masks(ids));
            forward(model, kv_cache, block_size, plan)
        })
    }
}

impl ModelRunner {
    /// A step that verifies proposed tokens: each sampling sequence's rows go through its
    /// pipeline in order (`BatchSampler::verify`).
    fn verify(
        &mut self,
        plan: &BatchPlan,
        logits: &Tensor,
        ids: &[RequestId],
        prompt_logprobs: Vec<Vec<crate::events::PromptTokenLogprob>>,
    ) -> Result<StepOutput> {
        let drafts: Vec<&[u32]> = plan
            .seqs
            .iter()
            .filter(|s| s.sample)
            .map(|s| s.draft_token_ids())
            .collect();
        let verified = self.sampler.verify(logits, ids, &drafts)?;
        let (accepted_drafts, tokens) = verified
            .into_iter()
            .map(|v| (v.accepted, Some(v.token)))
            .unzip();
        Ok(StepOutput {
            tokens,
            accepted_drafts,
            prompt_logprobs,
        })
    }
}

impl StepExecutor for ModelRunner {
    fn execute(&mut self, plan: &BatchPlan) -> Result<StepOutput> {
        let Some(draft) = self.draft.as_mut() else {
            return self.execute_target(plan);
        };
        let proposed = draft.propose(plan)?;
        let plan = proposed.as_ref().unwrap_or(plan);
        let output = self.execute_target(plan)?;
        if let Some(draft) = self.draft.as_mut() {
            draft.observe(plan, &output);
        }
        Ok(output)
    }

    fn add_request(&mut self, request: &EngineRequest, _max_output_tokens: usize) {
        self.sampler.add(request);
    }

    fn release(&mut self, id: RequestId) {
        self.sampler.release(id);
        if let Some(draft) = self.draft.as_mut() {
            draft.release(id);
        }
    }
}

impl ModelRunner {
    /// The target model's step on a plan whose proposals (if any) are filled in.
    fn execute_target(&mut self, plan: &BatchPlan) -> Result<StepOutput> {
        let ids: Vec<RequestId> = plan
            .seqs
            .iter()
            .filter(|s| s.sample)
            .map(|s| s.id)
            .collect();
        let Some(logits) = self.forward_and_masks(plan, &ids)? else {
            return Ok(StepOutput::default());
        };
        let num_sampling_rows = plan.num_sampling_rows();
        let prompt_logprobs = prompt_logprobs::prompt_logprobs(&logits, num_sampling_rows, plan)?;
        if ids.is_empty() {
            return Ok(StepOutput {
                prompt_logprobs,
                ..StepOutput::default()
            });
        }
        let sampling_logits = match prompt_logprobs.is_empty() {
            true => logits,
            false => logits.narrow(0, 0, num_sampling_rows)?,
        };
        if plan.has_drafts() {
            return self.verify(plan, &sampling_logits, &ids, prompt_logprobs);
        }
        let tokens = self.sampler.sample(&sampling_logits, &ids)?;
        Ok(StepOutput {
            tokens: tokens.into_iter().map(Some).collect(),
            accepted_drafts: Vec::new(),
            prompt_logprobs,
        })
    }
}
