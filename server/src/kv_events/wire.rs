//! KV-cache event batches in vLLM's wire format: msgpack, every struct an array (msgspec's
//! `array_like`), every event tagged by its class name first:
//!
//! ```text
//! batch   = [ts: float (Unix seconds), [event, ...], data_parallel_rank: int]
//! event   = ["BlockStored", block_hashes: [int], parent_block_hash: int | nil,
//!             token_ids: [int], block_size: int, lora_id: int | nil, medium: str | nil,
//!             lora_name: str | nil (, extra_keys: [[str, ...] | nil] when a block has any)]
//!         | ["BlockRemoved", block_hashes: [int], medium: str | nil]
//!         | ["AllBlocksCleared"]
//! ```
//!
//! Block hashes are the engine's own 64-bit hashes (the chain its prefix cache keys on), as
//! unsigned integers (vLLM's legacy `int` form of `ExternalBlockHash`, which llm-d and Dynamo
//! decode). `extra_keys` holds, per block, what besides tokens went into its hash: the LoRA
//! adapter's name and the cache salt.

use pagoda_engine::{KvCacheEvent, KvEventBatch, StoredBlocks};
use serde::Serialize;

use crate::unix_time::unix_s;

/// Which memory the blocks live in, as vLLM names it (`GPU`; `CPU` for an engine on the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    Gpu,
    Cpu,
}

impl Medium {
    pub fn as_str(self) -> &'static str {
        match self {
            Medium::Gpu => "GPU",
            Medium::Cpu => "CPU",
        }
    }
}

#[derive(Serialize)]
struct WireBatch<'a>(f64, Vec<WireEvent<'a>>, u32);

#[derive(Serialize)]
#[serde(untagged)]
enum WireEvent<'a> {
    Stored(WireStored<'a>),
    Removed(&'static str, Vec<u64>, &'static str),
    Cleared((&'static str,)),
}

/// BlockStored's fields; `extra_keys` is written only when some block has any (msgspec omits a
/// trailing default).
struct WireStored<'a> {
    block_hashes: Vec<u64>,
    parent_block_hash: Option<u64>,
    token_ids: &'a [u32],
    block_size: usize,
    lora_id: Option<u64>,
    medium: &'static str,
    lora_name: Option<&'a str>,
    extra_keys: Option<Vec<Vec<&'a str>>>,
}

impl Serialize for WireStored<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let len = if self.extra_keys.is_some() { 9 } else { 8 };
        let mut fields = serializer.serialize_tuple(len)?;
        fields.serialize_element("BlockStored")?;
        fields.serialize_element(&self.block_hashes)?;
        fields.serialize_element(&self.parent_block_hash)?;
        fields.serialize_element(self.token_ids)?;
        fields.serialize_element(&self.block_size)?;
        fields.serialize_element(&self.lora_id)?;
        fields.serialize_element(self.medium)?;
        fields.serialize_element(&self.lora_name)?;
        if let Some(keys) = &self.extra_keys {
            fields.serialize_element(keys)?;
        }
        fields.end()
    }
}

/// One batch's msgpack bytes; `data_parallel_rank` is always 0 (one engine per server).
pub fn encode_batch(batch: &KvEventBatch, medium: Medium) -> Vec<u8> {
    let ts = unix_s(batch.at);
    let events = batch.events.iter().map(|e| wire_event(e, medium)).collect();
    rmp_serde::to_vec(&WireBatch(ts, events, 0)).expect("msgpack of plain values")
}

fn wire_event(event: &KvCacheEvent, medium: Medium) -> WireEvent<'_> {
    match event {
        KvCacheEvent::BlockStored(stored) => wire_stored(stored, medium),
        KvCacheEvent::BlockRemoved { block_hashes } => WireEvent::Removed(
            "BlockRemoved",
            block_hashes.iter().map(|h| h.0).collect(),
            medium.as_str(),
        ),
        KvCacheEvent::AllBlocksCleared => WireEvent::Cleared(("AllBlocksCleared",)),
    }
}

fn wire_stored(stored: &StoredBlocks, medium: Medium) -> WireEvent<'_> {
    let lora_name = stored.lora.as_ref().map(|l| l.name.as_str());
    let keys: Vec<&str> = lora_name
        .into_iter()
        .chain(stored.cache_salt.as_deref())
        .collect();
    WireEvent::Stored(WireStored {
        block_hashes: stored.block_hashes.iter().map(|h| h.0).collect(),
        parent_block_hash: stored.parent_block_hash.map(|h| h.0),
        token_ids: &stored.token_ids,
        block_size: stored.block_size,
        lora_id: stored.lora.as_ref().map(|l| l.id.0),
        medium: medium.as_str(),
        lora_name,
        extra_keys: (!keys.is_empty()).then(|| vec![keys; stored.block_hashes.len()]),
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use pagoda_engine::{BlockHash, LoraId, StoredLora};
    use serde_json::{json, Value};

    use super::*;

    fn decode(bytes: &[u8]) -> Value {
        rmp_serde::from_slice(bytes).expect("valid msgpack")
    }

    fn stored(lora: Option<StoredLora>, cache_salt: Option<&str>) -> KvCacheEvent {
        KvCacheEvent::BlockStored(StoredBlocks {
            block_hashes: vec![BlockHash(u64::MAX), BlockHash(7)],
            parent_block_hash: Some(BlockHash(3)),
            token_ids: vec![1, 2, 3, 4],
            block_size: 2,
            lora,
            cache_salt: cache_salt.map(str::to_string),
        })
    }

    #[test]
    fn batches_are_vllm_arrays_with_tagged_events() {
        let batch = KvEventBatch {
            at: SystemTime::UNIX_EPOCH + Duration::from_millis(1500),
            events: vec![
                stored(None, None),
                KvCacheEvent::BlockRemoved {
                    block_hashes: vec![BlockHash(9)],
                },
                KvCacheEvent::AllBlocksCleared,
            ],
        };
        let value = decode(&encode_batch(&batch, Medium::Cpu));
        assert_eq!(
            value,
            json!([
                1.5,
                [
                    [
                        "BlockStored",
                        [u64::MAX, 7],
                        3,
                        [1, 2, 3, 4],
                        2,
                        null,
                        "CPU",
                        null
                    ],
                    ["BlockRemoved", [9], "CPU"],
                    ["AllBlocksCleared"]
                ],
                0
            ])
        );
    }

    #[test]
    fn lora_and_salt_fill_lora_fields_and_extra_keys_per_block() {
        let lora = StoredLora {
            id: LoraId(4),
            name: "sql".into(),
        };
        let batch = KvEventBatch {
            at: SystemTime::UNIX_EPOCH,
            events: vec![stored(Some(lora), Some("tenant"))],
        };
        let value = decode(&encode_batch(&batch, Medium::Gpu));
        assert_eq!(
            value[1][0],
            json!([
                "BlockStored",
                [u64::MAX, 7],
                3,
                [1, 2, 3, 4],
                2,
                4,
                "GPU",
                "sql",
                [["sql", "tenant"], ["sql", "tenant"]]
            ])
        );
    }
}
