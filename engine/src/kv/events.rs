//! KV-cache events: what the prefix cache stored, evicted or cleared, in the order it happened,
//! for routers that route by where a prefix is cached (llm-d's precise prefix scorer, Dynamo's
//! KV router). The engine records them only while someone listens (`EngineHandle::kv_events`),
//! hands one batch per step to a bounded queue and never waits for it: a full queue drops the
//! batch and counts it (`EngineStats::num_kv_event_batches_dropped_total`). The wire format is
//! the server's business.

use std::time::SystemTime;

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{Receiver, Sender};

use super::hash::BlockHash;
use crate::lora::adapter::LoraId;

/// Full blocks one sequence added to the prefix cache in one step, in order: each block's hash
/// chains the one before it, the first chains `parent_block_hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlocks {
    pub block_hashes: Vec<BlockHash>,
    /// The hash of the block before the first one (`None`: the first block is the sequence's).
    pub parent_block_hash: Option<BlockHash>,
    /// The blocks' tokens, `block_size` per block.
    pub token_ids: Vec<u32>,
    pub block_size: usize,
    /// The LoRA adapter the keys and values were computed with.
    pub lora: Option<StoredLora>,
    /// The request's cache salt, part of every block's hash.
    pub cache_salt: Option<String>,
}

/// The adapter of stored blocks, by id and by the name requests use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLora {
    pub id: LoraId,
    pub name: String,
}

/// One change of the prefix cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvCacheEvent {
    BlockStored(StoredBlocks),
    /// Blocks evicted (their memory taken for other tokens).
    BlockRemoved { block_hashes: Vec<BlockHash> },
    /// Every cached block was dropped (a prefix-cache reset).
    AllBlocksCleared,
}

/// The events of one engine step, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct KvEventBatch {
    pub at: SystemTime,
    pub events: Vec<KvCacheEvent>,
}

/// The prefix cache's changes since the last `take`, recorded only while enabled.
#[derive(Debug, Clone, Default)]
pub struct KvEventLog {
    events: Option<Vec<KvCacheEvent>>,
}

impl KvEventLog {
    pub fn enable(&mut self) {
        self.events.get_or_insert_with(Vec::new);
    }

    /// Stops recording and forgets what was recorded.
    pub fn disable(&mut self) {
        self.events = None;
    }

    pub fn is_enabled(&self) -> bool {
        self.events.is_some()
    }

    pub fn stored(&mut self, stored: StoredBlocks) {
        if let Some(events) = &mut self.events {
            events.push(KvCacheEvent::BlockStored(stored));
        }
    }

    /// An evicted block; evictions in a row share one event.
    pub fn removed(&mut self, hash: BlockHash) {
        let Some(events) = &mut self.events else {
            return;
        };
        match events.last_mut() {
            Some(KvCacheEvent::BlockRemoved { block_hashes }) => block_hashes.push(hash),
            _ => events.push(KvCacheEvent::BlockRemoved {
                block_hashes: vec![hash],
            }),
        }
    }

    pub fn cleared(&mut self) {
        if let Some(events) = &mut self.events {
            events.push(KvCacheEvent::AllBlocksCleared);
        }
    }

    /// The events recorded since the last call (none while disabled).
    pub fn take(&mut self) -> Vec<KvCacheEvent> {
        self.events.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// The engine's end of the bounded queue to a publisher.
#[derive(Debug)]
pub struct KvEventSender {
    tx: Sender<KvEventBatch>,
}

/// What became of a batch handed to the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvEventDelivery {
    Queued,
    /// The queue was full (the publisher is behind): the batch is lost.
    Dropped,
    /// Nobody listens any more.
    Closed,
}

impl KvEventSender {
    /// Queues a batch without waiting.
    pub fn offer(&self, batch: KvEventBatch) -> KvEventDelivery {
        match self.tx.try_send(batch) {
            Ok(()) => KvEventDelivery::Queued,
            Err(TrySendError::Full(_)) => KvEventDelivery::Dropped,
            Err(TrySendError::Closed(_)) => KvEventDelivery::Closed,
        }
    }
}

/// A bounded queue of at most `max_queued_batches` (at least 1) batches.
pub fn kv_event_queue(max_queued_batches: usize) -> (KvEventSender, Receiver<KvEventBatch>) {
    let (tx, rx) = tokio::sync::mpsc::channel(max_queued_batches.max(1));
    (KvEventSender { tx }, rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disabled_log_records_nothing_and_evictions_in_a_row_share_an_event() {
        let mut log = KvEventLog::default();
        log.removed(BlockHash(1));
        log.cleared();
        assert!(log.take().is_empty());
        log.enable();
        log.removed(BlockHash(1));
        log.removed(BlockHash(2));
        log.cleared();
        log.removed(BlockHash(3));
        assert_eq!(
            log.take(),
            vec![
                KvCacheEvent::BlockRemoved {
                    block_hashes: vec![BlockHash(1), BlockHash(2)]
                },
                KvCacheEvent::AllBlocksCleared,
                KvCacheEvent::BlockRemoved {
                    block_hashes: vec![BlockHash(3)]
                },
            ]
        );
        assert!(log.take().is_empty(), "take drains the log");
        assert!(log.is_enabled());
        log.disable();
        log.cleared();
        assert!(!log.is_enabled() && log.take().is_empty());
    }

    #[test]
    fn a_full_queue_drops_and_a_closed_one_says_so() {
        let (sender, mut rx) = kv_event_queue(1);
        let batch = || KvEventBatch {
            at: SystemTime::now(),
            events: vec![KvCacheEvent::AllBlocksCleared],
        };
        assert_eq!(sender.offer(batch()), KvEventDelivery::Queued);
        assert_eq!(sender.offer(batch()), KvEventDelivery::Dropped);
        assert!(rx.try_recv().is_ok());
        assert_eq!(sender.offer(batch()), KvEventDelivery::Queued);
        drop(rx);
        assert_eq!(sender.offer(batch()), KvEventDelivery::Closed);
    }
}
