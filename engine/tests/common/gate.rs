//! Gates that hold a request back until the test lets it go, so that what a test checks never
//! depends on how fast the machine is.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pagoda_engine::attention::{AttnMetadata, PagedKvCache};
use pagoda_engine::batch::BatchPlan;
use pagoda_engine::models::{CausalLm, ModelConfig, ModelInput};
use pagoda_engine::runner::{StepExecutor, StepOutput};

/// Permits for forward passes: `None` = open, `Some(n)` = `n` more passes, then wait.
#[derive(Debug)]
pub struct Gate {
    permits: Mutex<Option<usize>>,
    changed: Condvar,
}

impl Gate {
    /// A gate that lets `permits` passes through, then holds the next one.
    pub fn new(permits: usize) -> Arc<Self> {
        Arc::new(Self {
            permits: Mutex::new(Some(permits)),
            changed: Condvar::new(),
        })
    }

    /// Lets `permits` more passes through, then holds the next one (open or not before).
    pub fn close_after(&self, permits: usize) {
        *self.permits.lock().unwrap() = Some(permits);
        self.changed.notify_all();
    }

    /// Lets every pass through from now on.
    pub fn open(&self) {
        *self.permits.lock().unwrap() = None;
        self.changed.notify_all();
    }

    /// Waits for a permit and takes it.
    fn pass(&self) {
        let mut guard = self.permits.lock().unwrap();
        loop {
            match guard.as_mut() {
                None => return,
                Some(left) if *left > 0 => {
                    *left -= 1;
                    return;
                }
                Some(_) => guard = self.changed.wait(guard).unwrap(),
            }
        }
    }
}

/// A real model whose every forward pass first waits at `gate`: the engine thread stops inside a
/// step until the test allows it, and handles the commands sent meanwhile right after that step.
#[derive(Debug)]
pub struct GatedModel {
    pub inner: Box<dyn CausalLm>,
    pub gate: Arc<Gate>,
}

impl CausalLm for GatedModel {
    fn config(&self) -> &ModelConfig {
        self.inner.config()
    }

    fn device(&self) -> &candle_core::Device {
        self.inner.device()
    }

    fn forward(
        &self,
        input: &ModelInput,
        meta: &AttnMetadata,
        kv_cache: &mut dyn PagedKvCache,
    ) -> pagoda_engine::Result<candle_core::Tensor> {
        self.gate.pass();
        self.inner.forward(input, meta, kv_cache)
    }
}

/// An executor with no model that gives each sampling sequence token `token_id` while its budget
/// lasts, and "not ready" once it runs out: requests stay where they are, and the engine keeps
/// handling commands, until the test adds to the budget.
#[derive(Debug)]
pub struct BudgetedExecutor {
    token_id: u32,
    budget: Arc<AtomicUsize>,
    /// The last step gave no token.
    idle: bool,
}

impl BudgetedExecutor {
    pub fn new(token_id: u32, budget: Arc<AtomicUsize>) -> Self {
        Self {
            token_id,
            budget,
            idle: false,
        }
    }
}

/// Tokens a `BudgetedExecutor` may still give, shared with the test.
pub fn token_budget(tokens: usize) -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(tokens))
}

impl StepExecutor for BudgetedExecutor {
    fn execute(&mut self, plan: &BatchPlan) -> pagoda_engine::Result<StepOutput> {
        let ids: Vec<Option<u32>> = plan
            .seqs
            .iter()
            .filter(|s| s.sample)
            .map(|_| {
                let taken = self
                    .budget
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
                taken.ok().map(|_| self.token_id)
            })
            .collect();
        self.idle = ids.iter().all(Option::is_none);
        Ok(StepOutput::from_ids(ids))
    }

    /// With nothing given, wait briefly for a command before looking at the budget again.
    fn idle_until(&self) -> Option<Instant> {
        self.idle.then(|| Instant::now() + Duration::from_millis(1))
    }
}
