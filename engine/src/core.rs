//! The engine loop on its own OS thread: drain commands → schedule → execute (on its
//! `StepExecutor`) → update → send events. The engine owns all its state; callers talk to it
//! through `EngineHandle`. Starting one is `start.rs`.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::UnboundedSender;

use crate::batch::BatchPlan;
use crate::config::{EngineConfig, ItlTarget};
use crate::error::{EngineError, Result};
use crate::events::{FinishReason, TokenEvent};
use crate::handle::{EngineCommand, EngineInfo, EngineStats};
use crate::kv::events::{KvEventBatch, KvEventDelivery, KvEventSender};
use crate::kv::KvCacheManager;
use crate::request::RequestId;
use crate::runner::{StepExecutor, StepOutput};
use crate::scheduler::itl_budget::{ItlBudget, MIN_PREFILL_TOKENS};
use crate::scheduler::step_cost::StepShape;
use crate::scheduler::{Scheduler, SchedulerLimits, StepUpdate};
use crate::sequence::Sequence;
use crate::validate::{RequestLimits, ValidRequest};

type Built = (
    EngineCore,
    RequestLimits,
    Arc<Mutex<EngineStats>>,
    mpsc::Sender<EngineCommand>,
);

pub(crate) struct EngineCore {
    scheduler: Scheduler,
    /// Each step's prefill allowance while streams decode, learned from measured step times.
    itl: ItlBudget,
    executor: Box<dyn StepExecutor>,
    commands: mpsc::Receiver<EngineCommand>,
    streams: HashMap<RequestId, UnboundedSender<TokenEvent>>,
    stats: Arc<Mutex<EngineStats>>,
    totals: EngineStats,
    seeds: ChaCha8Rng,
    stop_requested: bool,
    /// Where the prefix cache's changes go, once someone subscribed.
    kv_events: Option<KvEventSender>,
}

impl EngineCore {
    /// Builds the engine state for an executor; `start` checked `info` against the configuration.
    pub(crate) fn build(
        config: &EngineConfig,
        info: &EngineInfo,
        executor: Box<dyn StepExecutor>,
    ) -> Built {
        let limits = SchedulerLimits {
            max_num_seqs: config.max_num_seqs,
            max_num_batched_tokens: config.max_num_batched_tokens,
            max_model_len: info.max_model_len,
            enable_chunked_prefill: config.enable_chunked_prefill,
            max_loras: config.lora.map(|l| l.max_loras),
        };
        let kv = KvCacheManager::new(
            info.num_kv_blocks,
            config.block_size,
            config.enable_prefix_caching,
        );
        let mut scheduler = Scheduler::new(limits, kv, info.model.eos_token_ids.clone());
        if let Some(speculative) = &config.speculative {
            scheduler = scheduler.with_speculation(speculative);
        }
        // Without chunked prefill a prompt cannot be cut to fit a step time.
        let itl_target = if config.enable_chunked_prefill {
            config.itl_target
        } else {
            ItlTarget::Off
        };
        let request_limits = RequestLimits {
            vocab_size: info.model.vocab_size,
            max_model_len: info.max_model_len,
            kv_capacity_tokens: info.kv_capacity_tokens,
            max_logprobs: info.max_logprobs,
        };
        let totals = EngineStats {
            num_kv_blocks_total: info.num_kv_blocks,
            ..EngineStats::default()
        };
        let stats = Arc::new(Mutex::new(totals.clone()));
        let (commands_tx, commands) = mpsc::channel();
        let core = EngineCore {
            scheduler,
            itl: ItlBudget::new(itl_target, MIN_PREFILL_TOKENS),
            executor,
            commands,
            streams: HashMap::new(),
            stats: stats.clone(),
            totals,
            seeds: ChaCha8Rng::seed_from_u64(config.seed),
            stop_requested: false,
            kv_events: None,
        };
        (core, request_limits, stats, commands_tx)
    }

    pub(crate) fn run(mut self) {
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
            EngineCommand::Submit(request, events) => self.admit(*request, events),
            EngineCommand::Abort(id) => self.abort(id),
            EngineCommand::StopAfter(id, num_kept) => self.stop_after(id, num_kept),
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
                self.publish_kv_events();
                self.publish_stats();
                let _ = reply.send(num_dropped);
            }
            EngineCommand::SubscribeKvEvents(sender) => {
                self.scheduler.kv_mut().enable_events();
                self.kv_events = Some(sender);
            }
            EngineCommand::Shutdown => return false,
        }
        true
    }

    fn admit(&mut self, request: ValidRequest, events: UnboundedSender<TokenEvent>) {
        let (request, max_output_tokens) = request.into_parts();
        if self.streams.contains_key(&request.id) || self.scheduler.contains(request.id) {
            let _ = events.send(TokenEvent::Error(EngineError::DuplicateRequest(
                request.id.0,
            )));
            return;
        }
        // An unseeded request gets one from the engine's generator now, so that whoever samples
        // it holds a complete seed.
        let fallback_seed = self.seeds.random::<u64>();
        let mut request = request;
        request.sampling.seed.get_or_insert(fallback_seed);
        self.executor.add_request(&request, max_output_tokens);
        self.streams.insert(request.id, events);
        self.scheduler
            .add(Sequence::new(request, max_output_tokens));
        self.publish_stats();
    }

    /// Ends a request and publishes the freed blocks at once (before the caller hears of it): an
    /// abort may leave the engine idle, and an idle engine publishes nothing until its next
    /// command.
    fn abort(&mut self, id: RequestId) {
        if let Some(seq) = self.scheduler.abort(id) {
            self.publish_stats();
            self.send_finished(&seq, Instant::now());
        }
    }

    /// Aborts a request whose caller keeps `num_kept` of its output tokens; the rest are not
    /// counted as generated.
    fn stop_after(&mut self, id: RequestId, num_kept: usize) {
        if let Some(seq) = self.scheduler.abort(id) {
            let num_dropped = seq.num_output_tokens().saturating_sub(num_kept) as u64;
            let total = &mut self.totals.num_generation_tokens_total;
            *total = total.saturating_sub(num_dropped);
            self.publish_stats();
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
        let started = Instant::now();
        let max_prefill_tokens = self.itl.max_prefill_tokens(self.scheduler.num_decoding());
        let plan = self.scheduler.schedule_within(max_prefill_tokens);
        if plan.is_empty() {
            // Nothing fits right now (cannot happen for validated requests); never spin.
            tracing::warn!(
                waiting = self.scheduler.num_waiting(),
                "no request could be scheduled"
            );
            self.wait_for_command(Instant::now() + Duration::from_millis(10));
            return;
        }
        match self.execute_guarded(&plan) {
            Ok(output) => {
                let update = self.scheduler.update(&plan, &output);
                let num_computed_tokens = update.num_computed_tokens;
                if num_computed_tokens > 0 || !update.tokens.is_empty() {
                    self.totals.num_steps_total += 1;
                    self.totals.step_tokens.observe(num_computed_tokens);
                }
                self.totals.num_computed_tokens_total += num_computed_tokens as u64;
                self.emit(update);
                let shape = StepShape::of(&plan);
                let elapsed = started.elapsed();
                tracing::trace!(
                    num_decode_seqs = shape.num_decode_seqs,
                    num_prefill_tokens = shape.num_prefill_tokens,
                    step_ms = elapsed.as_secs_f64() * 1e3,
                    "step"
                );
                self.itl.record(shape, elapsed);
            }
            Err(error) => {
                tracing::error!(%error, "step failed; ending its requests");
                self.totals.num_steps_total += 1;
                self.totals.num_computed_tokens_total += plan.num_batched_tokens as u64;
                let failed = self.scheduler.fail_plan(&plan, &error);
                self.publish_stats();
                for (seq, error) in failed {
                    self.send_error(seq.id, error);
                }
            }
        }
        debug_assert_eq!(self.scheduler.check_invariants(), Ok(()));
        self.publish_kv_events();
        self.publish_stats();
        if let Some(deadline) = self.executor.idle_until() {
            self.wait_for_command(deadline);
        }
    }

    /// Blocks until a command arrives (and handles it) or `deadline` passes.
    fn wait_for_command(&mut self, deadline: Instant) {
        let timeout = deadline.saturating_duration_since(Instant::now());
        if let Ok(command) = self.commands.recv_timeout(timeout) {
            self.stop_requested |= !self.handle(command);
        }
    }

    /// Runs the executor, turning a panic inside it into an error for this step's requests so
    /// that the engine itself survives, and checks its output against the plan.
    fn execute_guarded(&mut self, plan: &BatchPlan) -> Result<StepOutput> {
        let executor = &mut self.executor;
        let output =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| executor.execute(plan)))
                .unwrap_or_else(|panic| {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    Err(EngineError::Execution(format!(
                        "the model panicked: {message}"
                    )))
                })?;
        output.check_against(plan, self.scheduler.proposes_tokens())?;
        Ok(output)
    }

    fn emit(&mut self, update: StepUpdate) {
        self.totals.num_generation_tokens_total += update.tokens.len() as u64;
        self.totals.num_prompt_tokens_total += update.num_prompt_tokens as u64;
        // Publish before sending: a caller that sees its request finish then reads stats that
        // already count it.
        self.publish_stats();
        for (id, entries) in update.prompt_logprobs {
            if let Some(tx) = self.streams.get(&id) {
                // A closed stream is noticed (and aborted) when its token is sent below.
                let _ = tx.send(TokenEvent::PromptLogprobs(entries));
            }
        }
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
        let mut failed = update.failed;
        for seq in update.finished {
            match failed.iter().position(|(id, _)| *id == seq.id) {
                Some(index) => self.send_error(seq.id, failed.swap_remove(index).1),
                None => self.send_finished(&seq, now),
            }
        }
    }

    fn send_finished(&mut self, seq: &Sequence, at: Instant) {
        self.executor.release(seq.id);
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
        self.executor.release(id);
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

    /// Hands this step's prefix-cache changes to the subscriber's queue, never waiting for it.
    fn publish_kv_events(&mut self) {
        let Some(sender) = &self.kv_events else {
            return;
        };
        let events = self.scheduler.kv_mut().take_events();
        if events.is_empty() {
            return;
        }
        let batch = KvEventBatch {
            at: std::time::SystemTime::now(),
            events,
        };
        self.totals.num_kv_event_batches_total += 1;
        match sender.offer(batch) {
            KvEventDelivery::Queued => {}
            KvEventDelivery::Dropped => self.totals.num_kv_event_batches_dropped_total += 1,
            KvEventDelivery::Closed => {
                // Still counted as lost: the subscriber's events stop here.
                self.totals.num_kv_event_batches_dropped_total += 1;
                self.kv_events = None;
                self.scheduler.kv_mut().disable_events();
            }
        }
    }

    fn publish_stats(&mut self) {
        let kv = self.scheduler.kv();
        self.totals.num_running = self.scheduler.num_running();
        self.totals.num_waiting = self.scheduler.num_waiting();
        self.totals.num_kv_blocks_used = kv.num_used_blocks();
        self.totals.num_preemptions_total = self.scheduler.num_preemptions_total();
        self.totals.num_cached_kv_blocks = kv.num_cached_blocks();
        self.totals.num_prefix_cache_evictions_total = kv.num_evictions();
        self.totals.spec_decode = self.scheduler.spec_decode_counters().cloned();
        let prefix = self.scheduler.prefix_cache_counters();
        self.totals.prefix_cache_queries_tokens_total = prefix.num_queried_tokens;
        self.totals.prefix_cache_hits_tokens_total = prefix.num_hit_tokens;
        let num_decoding = self.scheduler.num_decoding();
        self.totals.itl_target_seconds =
            self.itl.step_target(num_decoding).map(|t| t.as_secs_f64());
        self.totals.prefill_token_cost_seconds =
            self.itl.prefill_token_cost().map(|t| t.as_secs_f64());
        if self.scheduler.limits().max_loras.is_some() {
            let (running, waiting) = self.scheduler.lora_adapter_names();
            self.totals.running_lora_adapters = running;
            self.totals.waiting_lora_adapters = waiting;
        }
        if let Ok(mut stats) = self.stats.lock() {
            *stats = self.totals.clone();
        }
    }
}
