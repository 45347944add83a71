//! The engine loop on its own OS thread: drain commands → schedule → execute → update → send
//! events. The engine owns all its state; callers talk to it through `EngineHandle`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use candle_core::Device;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::UnboundedSender;

use crate::attention::CpuKvCache;
use crate::batch::{BatchPlan, StepLogits};
use crate::config::EngineConfig;
use crate::error::{EngineError, Result};
use crate::events::{FinishReason, TokenEvent};
use crate::handle::{EngineCommand, EngineHandle, EngineInfo, EngineStats};
use crate::kv::KvCacheManager;
use crate::models::{load_model, CausalLm};
use crate::request::{EngineRequest, RequestId};
use crate::runner::ModelRunner;
use crate::scheduler::{Scheduler, SchedulerLimits, StepUpdate};
use crate::sequence::Sequence;
use crate::validate::RequestLimits;

/// Loads a model file and starts an engine on it (CPU).
pub fn start_engine(config: EngineConfig, model_path: &Path) -> Result<EngineHandle> {
    config.dtype.resolve_for_cpu();
    let model = load_model(model_path, &Device::Cpu, config.weight_format)?;
    start_engine_with_model(config, model)
}

/// Starts an engine thread on an already loaded model.
pub fn start_engine_with_model(
    config: EngineConfig,
    model: Box<dyn CausalLm>,
) -> Result<EngineHandle> {
    let (core, info, limits, stats, commands_tx) = EngineCore::build(config, model)?;
    tracing::info!(
        kv_capacity_tokens = info.kv_capacity_tokens,
        num_kv_blocks = info.num_kv_blocks,
        max_model_len = info.max_model_len,
        "KV cache holds {} tokens: maximum concurrency at max_model_len {} is {:.2}",
        info.kv_capacity_tokens,
        info.max_model_len,
        info.max_concurrency_at_max_model_len
    );
    let thread = std::thread::Builder::new()
        .name("pagoda-engine".into())
        .spawn(move || run_in_thread_pool(core))
        .map_err(|e| EngineError::Config(format!("cannot spawn the engine thread: {e}")))?;
    Ok(EngineHandle::new(commands_tx, stats, info, limits, thread))
}

/// Runs the engine loop on a worker of its own rayon pool, so that the parallel kernels it calls
/// start on the current thread instead of being handed to other threads and waited for.
fn run_in_thread_pool(core: EngineCore) {
    match rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("pagoda-worker-{i}"))
        .build()
    {
        Ok(pool) => pool.install(move || core.run()),
        Err(error) => {
            tracing::warn!(%error, "no dedicated thread pool; using the global one");
            core.run();
        }
    }
}

type Built = (
    EngineCore,
    EngineInfo,
    RequestLimits,
    Arc<Mutex<EngineStats>>,
    mpsc::Sender<EngineCommand>,
);

/// Sizes the KV cache from the memory budget: whole blocks of all layers' keys and values.
fn num_kv_blocks(config: &EngineConfig, model: &dyn CausalLm) -> usize {
    let cfg = model.config();
    let bytes_per_block =
        CpuKvCache::bytes_per_token(cfg.num_layers, cfg.attn_shape()) * config.block_size;
    config.kv_cache_memory_bytes / bytes_per_block
}

struct EngineCore {
    scheduler: Scheduler,
    runner: ModelRunner,
    commands: mpsc::Receiver<EngineCommand>,
    streams: HashMap<RequestId, UnboundedSender<TokenEvent>>,
    stats: Arc<Mutex<EngineStats>>,
    totals: EngineStats,
    seeds: ChaCha8Rng,
    stop_requested: bool,
}

impl EngineCore {
    fn build(config: EngineConfig, model: Box<dyn CausalLm>) -> Result<Built> {
        config.validate()?;
        let cfg = model.config().clone();
        let max_model_len = config.resolve_max_model_len(cfg.context_length)?;
        let num_blocks = num_kv_blocks(&config, model.as_ref());
        let kv_capacity_tokens = num_blocks * config.block_size;
        if kv_capacity_tokens < max_model_len {
            return Err(EngineError::Config(format!(
                "the KV cache ({} bytes) holds {kv_capacity_tokens} tokens, fewer than max_model_len {max_model_len}; \
                 raise kv_cache_memory or lower max_model_len",
                config.kv_cache_memory_bytes
            )));
        }
        let kv_cache = CpuKvCache::new(
            cfg.num_layers,
            cfg.attn_shape(),
            config.block_size,
            num_blocks,
        );
        let limits = SchedulerLimits {
            max_num_seqs: config.max_num_seqs,
            max_num_batched_tokens: config.max_num_batched_tokens,
            max_model_len,
            enable_chunked_prefill: config.enable_chunked_prefill,
        };
        let scheduler = Scheduler::new(
            limits,
            KvCacheManager::new(num_blocks, config.block_size, config.enable_prefix_caching),
            cfg.eos_token_ids.clone(),
        );
        let info = EngineInfo {
            max_model_len,
            block_size: config.block_size,
            num_kv_blocks: num_blocks,
            kv_capacity_tokens,
            max_concurrency_at_max_model_len: kv_capacity_tokens as f64 / max_model_len as f64,
            model: cfg.clone(),
        };
        let request_limits = RequestLimits {
            vocab_size: cfg.vocab_size,
            max_model_len,
            kv_capacity_tokens,
        };
        let totals = EngineStats {
            num_kv_blocks_total: num_blocks,
            ..EngineStats::default()
        };
        let stats = Arc::new(Mutex::new(totals.clone()));
        let (commands_tx, commands) = mpsc::channel();
        let core = EngineCore {
            scheduler,
            runner: ModelRunner::new(model, Box::new(kv_cache), config.block_size),
            commands,
            streams: HashMap::new(),
            stats: stats.clone(),
            totals,
            seeds: ChaCha8Rng::seed_from_u64(config.seed),
            stop_requested: false,
        };
        Ok((core, info, request_limits, stats, commands_tx))
    }

    fn run(mut self) {
        loop {
            if !self.scheduler.has_work() {
                let Ok(command) = self.commands.recv() else {
                    break;
                };
                if !self.handle(command) {
                    break;
                }
            }
            let mut keep_running = true;
            while let Ok(command) = self.commands.try_recv() {
                keep_running &= self.handle(command);
            }
            if !keep_running || self.stop_requested {
                break;
            }
            self.abort_abandoned();
            if self.scheduler.has_work() {
                self.step();
            } else {
                self.publish_stats();
            }
        }
        self.finish_all();
    }

    /// Applies one command; returns false on shutdown.
    fn handle(&mut self, command: EngineCommand) -> bool {
        match command {
            EngineCommand::Submit(request, max_output_tokens, events) => {
                self.admit(request, max_output_tokens, events)
            }
            EngineCommand::Abort(id) => self.abort(id),
            EngineCommand::AbortOwned(id, owner) => {
                if self
                    .streams
                    .get(&id)
                    .is_some_and(|tx| tx.same_channel(&owner))
                {
                    self.abort(id);
                }
            }
            EngineCommand::ResetPrefixCache(reply) => {
                let num_dropped = self.scheduler.reset_prefix_cache();
                tracing::info!(num_dropped, "prefix cache reset");
                self.publish_stats();
                let _ = reply.send(num_dropped);
            }
            EngineCommand::Shutdown => return false,
        }
        true
    }

    fn admit(
        &mut self,
        request: EngineRequest,
        max_output_tokens: usize,
        events: UnboundedSender<TokenEvent>,
    ) {
        if self.streams.contains_key(&request.id) || self.scheduler.contains(request.id) {
            let _ = events.send(TokenEvent::Error(EngineError::DuplicateRequest(
                request.id.0,
            )));
            return;
        }
        let seed = self.seeds.random::<u64>();
        self.streams.insert(request.id, events);
        self.scheduler
            .add(Sequence::new(request, max_output_tokens, seed));
        self.publish_stats();
    }

    fn abort(&mut self, id: RequestId) {
        if let Some(seq) = self.scheduler.abort(id) {
            self.send_finished(&seq, Instant::now());
        }
    }

    /// Aborts requests whose caller dropped its stream without telling us.
    fn abort_abandoned(&mut self) {
        let gone: Vec<RequestId> = self
            .streams
            .iter()
            .filter(|(_, tx)| tx.is_closed())
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.abort(id);
            self.streams.remove(&id);
        }
    }

    fn step(&mut self) {
        let plan = self.scheduler.schedule();
        if plan.is_empty() {
            // Nothing fits right now (cannot happen for validated requests); never spin.
            tracing::warn!(
                waiting = self.scheduler.num_waiting(),
                "no request could be scheduled"
            );
            if let Ok(command) = self
                .commands
                .recv_timeout(std::time::Duration::from_millis(10))
            {
                self.stop_requested |= !self.handle(command);
            }
            return;
        }
        match self.execute_guarded(&plan) {
            Ok(logits) => {
                let update = self.scheduler.update(&plan, &logits);
                self.emit(update);
            }
            Err(error) => {
                tracing::error!(%error, "step failed; ending its requests");
                for (seq, error) in self.scheduler.fail_plan(&plan, &error) {
                    self.send_error(seq.id, error);
                }
            }
        }
        self.totals.num_steps_total += 1;
        self.totals.num_computed_tokens_total += plan.num_batched_tokens as u64;
        debug_assert_eq!(self.scheduler.check_invariants(), Ok(()));
        self.publish_stats();
    }

    /// Runs the model, turning a panic inside it into an error for this step's requests so that
    /// the engine itself survives.
    fn execute_guarded(&mut self, plan: &BatchPlan) -> Result<StepLogits> {
        let runner = &mut self.runner;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.execute(plan)))
            .unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                Err(EngineError::Execution(format!(
                    "the model panicked: {message}"
                )))
            })
    }

    fn emit(&mut self, update: StepUpdate) {
        self.totals.num_generation_tokens_total += update.tokens.len() as u64;
        self.totals.num_prompt_tokens_total += update.num_prompt_tokens as u64;
        for (id, token) in update.tokens {
            let delivered = self
                .streams
                .get(&id)
                .is_some_and(|tx| tx.send(TokenEvent::Token(token)).is_ok());
            if !delivered {
                self.abort(id);
                self.streams.remove(&id);
            }
        }
        let now = Instant::now();
        for seq in update.finished {
            self.send_finished(&seq, now);
        }
        for (seq, error) in update.failed {
            self.send_error(seq.id, error);
        }
    }

    fn send_finished(&mut self, seq: &Sequence, at: Instant) {
        let reason = match seq.status {
            crate::sequence::SequenceStatus::Finished(reason) => reason,
            _ => FinishReason::Abort,
        };
        if let Some(tx) = self.streams.remove(&seq.id) {
            let _ = tx.send(TokenEvent::Finished {
                reason,
                usage: seq.usage(),
                timings: seq.timings(at),
            });
        }
    }

    fn send_error(&mut self, id: RequestId, error: EngineError) {
        if let Some(tx) = self.streams.remove(&id) {
            let _ = tx.send(TokenEvent::Error(error));
        }
    }

    fn finish_all(&mut self) {
        let now = Instant::now();
        for seq in self.scheduler.abort_all() {
            self.send_finished(&seq, now);
        }
        self.streams.clear();
        self.publish_stats();
    }

    fn publish_stats(&mut self) {
        let kv = self.scheduler.kv();
        self.totals.num_running = self.scheduler.num_running();
        self.totals.num_waiting = self.scheduler.num_waiting();
        self.totals.num_kv_blocks_used = kv.num_used_blocks();
        self.totals.num_preemptions_total = self.scheduler.num_preemptions_total();
        self.totals.num_cached_kv_blocks = kv.num_cached_blocks();
        self.totals.num_prefix_cache_evictions_total = kv.num_evictions();
        let prefix = self.scheduler.prefix_cache_counters();
        self.totals.prefix_cache_queries_tokens_total = prefix.num_queried_tokens;
        self.totals.prefix_cache_hits_tokens_total = prefix.num_hit_tokens;
        if let Ok(mut stats) = self.stats.lock() {
            *stats = self.totals.clone();
        }
    }
}
