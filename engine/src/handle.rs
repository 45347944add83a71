//! `EngineHandle`: the `Clone` handle callers hold, and `RequestStream`, one request's events.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::mpsc::{
    unbounded_channel, Receiver, UnboundedReceiver, UnboundedSender, WeakUnboundedSender,
};

use crate::device::DeviceSpec;
use crate::error::EngineError;
use crate::events::TokenEvent;
use crate::kv::events::{kv_event_queue, KvEventBatch, KvEventSender};
use crate::kv_cache_dtype::KvCacheDType;
use crate::lora::adapter::LoraAdapter;
use crate::lora::load::{load_lora_adapter, LoraLoadOptions};
use crate::models::ModelConfig;
use crate::request::{EngineRequest, RequestId};
use crate::spec_decode::{SpecDecodeCounters, SpeculativeConfig};
use crate::step_tokens::StepTokenCounts;
use crate::validate::{RequestLimits, ValidRequest};

/// What the engine thread is told.
#[derive(Debug)]
pub(crate) enum EngineCommand {
    Submit(Box<ValidRequest>, UnboundedSender<TokenEvent>),
    Abort(RequestId),
    /// Abort, the caller keeping only this many output tokens (a stop string matched).
    StopAfter(RequestId, usize),
    /// Sent when a stream is dropped early: aborts the request only if that stream still owns it
    /// (a stream rejected as a duplicate must not cancel the request that holds the id).
    AbortOwned(RequestId, UnboundedSender<TokenEvent>),
    /// Drop every cached prefix; the reply is the number of blocks that left the cache.
    ResetPrefixCache(tokio::sync::oneshot::Sender<usize>),
    /// Record the prefix cache's changes from now on and queue them here, one batch per step.
    SubscribeKvEvents(KvEventSender),
    Shutdown,
}

/// A snapshot of the engine's load, refreshed after every step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineStats {
    pub num_running: usize,
    pub num_waiting: usize,
    pub num_kv_blocks_used: usize,
    pub num_kv_blocks_total: usize,
    pub num_preemptions_total: u64,
    /// Blocks registered in the prefix cache, in use or free (free ones are evictable).
    pub num_cached_kv_blocks: usize,
    /// Prompt tokens looked up in the prefix cache (at first admission).
    pub prefix_cache_queries_tokens_total: u64,
    /// Of those, tokens found in the cache.
    pub prefix_cache_hits_tokens_total: u64,
    /// Cached blocks dropped to make room.
    pub num_prefix_cache_evictions_total: u64,
    /// KV-cache event batches queued for the publisher (`EngineHandle::kv_events`).
    pub num_kv_event_batches_total: u64,
    /// Of the batches made, those lost because the publisher's queue was full.
    pub num_kv_event_batches_dropped_total: u64,
    pub num_prompt_tokens_total: u64,
    pub num_generation_tokens_total: u64,
    /// Tokens run through the model (prefill chunks, decodes, recomputation after preemption).
    pub num_computed_tokens_total: u64,
    pub num_steps_total: u64,
    /// Steps by their number of tokens (vLLM's `iteration_tokens_total`).
    pub step_tokens: StepTokenCounts,
    /// The step time aimed at while the running sequences decode (`--itl-target-ms`); `None`
    /// when no target applies (off, nothing decoding, or `auto` still learning).
    pub itl_target_seconds: Option<f64>,
    /// The learned cost of one prefill token in a step with decodes; `None` until learned.
    pub prefill_token_cost_seconds: Option<f64>,
    /// Names of the LoRA adapters of running sequences (sorted, distinct; empty without LoRA).
    pub running_lora_adapters: Vec<String>,
    /// Names of the LoRA adapters of waiting sequences (sorted, distinct).
    pub waiting_lora_adapters: Vec<String>,
    /// What speculative decoding proposed and accepted (`None`: the engine does not speculate).
    pub spec_decode: Option<SpecDecodeCounters>,
}

impl EngineStats {
    /// Fraction of KV blocks in use, in [0, 1].
    pub fn kv_cache_usage(&self) -> f64 {
        if self.num_kv_blocks_total == 0 {
            return 0.0;
        }
        self.num_kv_blocks_used as f64 / self.num_kv_blocks_total as f64
    }
}

/// Fixed facts about a started engine.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineInfo {
    pub model: ModelConfig,
    pub max_model_len: usize,
    pub block_size: usize,
    pub num_kv_blocks: usize,
    pub kv_capacity_tokens: usize,
    /// How many sequences of `max_model_len` tokens the cache holds at once.
    pub max_concurrency_at_max_model_len: f64,
    /// What the KV cache stores keys and values in (never `Auto`).
    pub kv_cache_dtype: KvCacheDType,
    /// Whether full blocks are shared between requests by their prefix.
    pub enable_prefix_caching: bool,
    /// Where the model, its KV cache and its adapters live.
    pub device: DeviceSpec,
    /// The most alternatives `top_logprobs` / `prompt_logprobs` may ask for (at most the
    /// vocabulary).
    pub max_logprobs: usize,
    /// Speculative decoding, when the engine runs it.
    pub speculative: Option<SpeculativeConfig>,
}

/// Talks to the engine thread. Cheap to clone; every clone drives the same engine.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    commands: mpsc::Sender<EngineCommand>,
    stats: Arc<Mutex<EngineStats>>,
    info: Arc<EngineInfo>,
    limits: RequestLimits,
    next_request_id: Arc<AtomicU64>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    /// How adapters are loaded for this engine's model (`None`: LoRA is off, or no model).
    lora: Option<Arc<LoraLoadOptions>>,
}

impl EngineHandle {
    pub(crate) fn new(
        commands: mpsc::Sender<EngineCommand>,
        stats: Arc<Mutex<EngineStats>>,
        info: EngineInfo,
        limits: RequestLimits,
        thread: JoinHandle<()>,
    ) -> Self {
        Self {
            commands,
            stats,
            info: Arc::new(info),
            limits,
            next_request_id: Arc::new(AtomicU64::new(1)),
            thread: Arc::new(Mutex::new(Some(thread))),
            lora: None,
        }
    }

    /// Lets this engine load LoRA adapters (its model's device, dtype and rank limit).
    pub(crate) fn with_lora(mut self, options: LoraLoadOptions) -> Self {
        self.lora = Some(Arc::new(options));
        self
    }

    /// Whether LoRA adapters can be loaded and served.
    pub fn serves_lora(&self) -> bool {
        self.lora.is_some()
    }

    /// Loads the PEFT adapter in `dir` for this engine's model, named `name`. Reads and converts
    /// the files on the calling thread (call it from a blocking thread, not an async task).
    /// Errors name the file, field or tensor at fault.
    pub fn load_lora_adapter(
        &self,
        name: &str,
        dir: &Path,
    ) -> Result<Arc<LoraAdapter>, EngineError> {
        let Some(options) = &self.lora else {
            return Err(EngineError::Adapter(
                "this engine serves no LoRA adapters (start it with --enable-lora and a model)"
                    .into(),
            ));
        };
        load_lora_adapter(name, dir, &self.info.model, options).map(Arc::new)
    }

    pub fn info(&self) -> &EngineInfo {
        &self.info
    }

    /// A fresh id for the next request.
    pub fn next_request_id(&self) -> RequestId {
        RequestId(self.next_request_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Checks a request against this engine's model and limits: the only way to a
    /// [`ValidRequest`]. Errors name the field at fault.
    pub fn validate(&self, request: EngineRequest) -> Result<ValidRequest, EngineError> {
        if request.lora.is_some() && self.lora.is_none() {
            return Err(EngineError::InvalidRequest {
                field: "model",
                message: "this engine serves no LoRA adapters".into(),
            });
        }
        self.limits.validate(request)
    }

    /// Queues a checked request; its events arrive on the returned stream.
    pub fn submit(&self, request: ValidRequest) -> Result<RequestStream, EngineError> {
        let (events_tx, events_rx) = unbounded_channel();
        let owner = events_tx.downgrade();
        let id = request.id();
        self.commands
            .send(EngineCommand::Submit(Box::new(request), events_tx))
            .map_err(|_| EngineError::ShutDown)?;
        Ok(RequestStream {
            id,
            owner,
            events: events_rx,
            commands: self.commands.clone(),
            finished: false,
        })
    }

    /// Ends a request; its stream receives `Finished { reason: Abort }`.
    pub fn abort(&self, id: RequestId) -> Result<(), EngineError> {
        self.commands
            .send(EngineCommand::Abort(id))
            .map_err(|_| EngineError::ShutDown)
    }

    /// Ends a request whose caller keeps only its first `num_output_tokens` tokens (its text
    /// matched a stop string): the tokens generated past them before the command arrived are not
    /// counted in `num_generation_tokens_total`, as vLLM counts only the tokens it returns.
    pub fn stop_after(&self, id: RequestId, num_output_tokens: usize) -> Result<(), EngineError> {
        self.commands
            .send(EngineCommand::StopAfter(id, num_output_tokens))
            .map_err(|_| EngineError::ShutDown)
    }

    /// Drops every cached prefix (blocks in use stay, but are no longer shared with new requests).
    /// Returns how many blocks left the cache.
    pub async fn reset_prefix_cache(&self) -> Result<usize, EngineError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.commands
            .send(EngineCommand::ResetPrefixCache(reply))
            .map_err(|_| EngineError::ShutDown)?;
        answer.await.map_err(|_| EngineError::ShutDown)
    }

    /// From now on, the prefix cache's changes (stored, evicted, cleared blocks), one batch per
    /// step, on a queue of at most `max_queued_batches`. The engine never waits for it: when it
    /// is full a batch is dropped and counted (`num_kv_event_batches_dropped_total`). Subscribe
    /// once, before serving: a second subscriber replaces the first.
    pub fn kv_events(
        &self,
        max_queued_batches: usize,
    ) -> Result<Receiver<KvEventBatch>, EngineError> {
        let (sender, receiver) = kv_event_queue(max_queued_batches);
        self.commands
            .send(EngineCommand::SubscribeKvEvents(sender))
            .map_err(|_| EngineError::ShutDown)?;
        Ok(receiver)
    }

    /// `reset_prefix_cache` for callers outside an async runtime.
    pub fn blocking_reset_prefix_cache(&self) -> Result<usize, EngineError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.commands
            .send(EngineCommand::ResetPrefixCache(reply))
            .map_err(|_| EngineError::ShutDown)?;
        answer.blocking_recv().map_err(|_| EngineError::ShutDown)
    }

    pub fn stats(&self) -> EngineStats {
        match self.stats.lock() {
            Ok(stats) => stats.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Aborts every request, stops the engine thread and waits for it. Idempotent.
    pub fn shutdown(&self) {
        let _ = self.commands.send(EngineCommand::Shutdown);
        let thread = match self.thread.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("engine thread panicked");
            }
        }
    }
}

/// One request's events. Dropping it before the end aborts the request and frees its blocks.
#[derive(Debug)]
pub struct RequestStream {
    id: RequestId,
    /// Identifies this stream's channel to the engine; weak, so it never keeps the channel open.
    owner: WeakUnboundedSender<TokenEvent>,
    events: UnboundedReceiver<TokenEvent>,
    commands: mpsc::Sender<EngineCommand>,
    finished: bool,
}

impl RequestStream {
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// The next event; `None` once the request has ended.
    pub async fn next(&mut self) -> Option<TokenEvent> {
        let event = self.events.recv().await;
        self.observe(&event);
        event
    }

    /// The next event, blocking this thread (not for use inside an async runtime).
    pub fn blocking_next(&mut self) -> Option<TokenEvent> {
        let event = self.events.blocking_recv();
        self.observe(&event);
        event
    }

    fn observe(&mut self, event: &Option<TokenEvent>) {
        if matches!(
            event,
            None | Some(TokenEvent::Finished { .. }) | Some(TokenEvent::Error(_))
        ) {
            self.finished = true;
        }
    }
}

impl Drop for RequestStream {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // No strong sender left means the engine already let go of this stream.
        if let Some(owner) = self.owner.upgrade() {
            let _ = self
                .commands
                .send(EngineCommand::AbortOwned(self.id, owner));
        }
    }
}
