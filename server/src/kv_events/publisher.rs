//! The ZMQ publisher of KV-cache events, vLLM's protocol: every batch goes out on a PUB socket
//! as `[topic, seq (8 bytes, big-endian), msgpack batch]` and is kept, up to `buffer_steps`
//! batches, for replays; a ROUTER socket answers a replay request `[start seq (8 bytes)]` with
//! `[seq, batch]` for every kept batch from `start seq` on, then `[-1 (8 bytes), ""]`.
//!
//! The engine hands batches to a bounded queue and never waits (see the engine's
//! `EngineHandle::kv_events`); the PUB socket never waits either: a subscriber that stops
//! reading loses live batches past its queue and can replay them by sequence number. Replays
//! run on their own task, so a slow replay client delays only replays.
//!
//! The ZMQ library is `zeromq` (zmq.rs): pure Rust on tokio, so no libzmq to build, link or
//! ship; it speaks ZMTP 3, which pyzmq, libzmq, Go's and Dynamo's subscribers read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use pagoda_engine::{EngineHandle, KvEventBatch};
use tokio::sync::mpsc::Receiver;
use zeromq::prelude::*;
use zeromq::{PubSocket, RouterRecvHalf, RouterSendHalf, RouterSocket, ZmqMessage};

use super::config::{bind_address, binds, KvEventsConfig};
use super::wire::{encode_batch, Medium};

/// The sequence number that ends a replay.
const END_OF_REPLAY: i64 = -1;

/// Kept batches, oldest first, with their sequence numbers.
type ReplayBuffer = Arc<Mutex<VecDeque<(u64, Bytes)>>>;

/// Where the sockets ended up (ports resolved when the endpoint asked for port 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherEndpoints {
    pub publish: String,
    pub replay: Option<String>,
}

/// Subscribes to the engine's KV-cache events and publishes them until the engine stops.
/// Fails when a socket cannot be bound (a port in use, a bad address).
pub async fn start(
    config: &KvEventsConfig,
    engine: &EngineHandle,
    medium: Medium,
) -> anyhow::Result<PublisherEndpoints> {
    let mut publish = PubSocket::new();
    let publish_endpoint = if binds(&config.endpoint) {
        let bound = publish
            .bind(&bind_address(&config.endpoint))
            .await
            .with_context(|| format!("cannot bind the KV-events socket {}", config.endpoint))?;
        bound.to_string()
    } else {
        config.endpoint.clone()
    };
    let buffer: ReplayBuffer = Arc::new(Mutex::new(VecDeque::new()));
    let replay = match &config.replay_endpoint {
        Some(endpoint) => {
            let mut router = RouterSocket::new();
            let bound = router
                .bind(&bind_address(endpoint))
                .await
                .with_context(|| format!("cannot bind the KV-events replay socket {endpoint}"))?;
            let (send, recv) = router.split();
            tokio::spawn(serve_replays(send, recv, buffer.clone()));
            Some(bound.to_string())
        }
        None => None,
    };
    let batches = engine
        .kv_events(config.max_queue_size)
        .context("the engine stopped before KV-cache events could start")?;
    let connect_to = (!binds(&config.endpoint)).then(|| config.endpoint.clone());
    let sink = Publisher {
        socket: publish,
        topic: Bytes::from(config.topic.clone().into_bytes()),
        medium,
        buffer,
        max_buffered: config.buffer_steps,
        next_seq: 0,
    };
    tokio::spawn(sink.run(batches, connect_to));
    tracing::info!(
        endpoint = %publish_endpoint,
        replay_endpoint = replay.as_deref().unwrap_or("none"),
        topic = %config.topic,
        "publishing KV-cache events"
    );
    Ok(PublisherEndpoints {
        publish: publish_endpoint,
        replay,
    })
}

struct Publisher {
    socket: PubSocket,
    topic: Bytes,
    medium: Medium,
    buffer: ReplayBuffer,
    max_buffered: usize,
    next_seq: u64,
}

impl Publisher {
    async fn run(mut self, mut batches: Receiver<KvEventBatch>, connect_to: Option<String>) {
        if let Some(endpoint) = connect_to {
            self.connect(&endpoint).await;
        }
        while let Some(batch) = batches.recv().await {
            self.publish(&batch).await;
        }
        tracing::debug!("KV-cache events end: the engine stopped");
    }

    /// Connects to a collector that binds, retrying until it is there (batches made meanwhile
    /// wait in the engine's queue, or are dropped and counted when it fills).
    async fn connect(&mut self, endpoint: &str) {
        let mut delay = Duration::from_millis(100);
        loop {
            match self.socket.connect(endpoint).await {
                Ok(()) => return,
                Err(error) => {
                    tracing::warn!(%error, endpoint, "cannot connect the KV-events socket; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn publish(&mut self, batch: &KvEventBatch) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let payload = Bytes::from(encode_batch(batch, self.medium));
        let frames = vec![
            self.topic.clone(),
            Bytes::copy_from_slice(&seq.to_be_bytes()),
            payload.clone(),
        ];
        let message = ZmqMessage::try_from(frames).expect("three frames");
        if let Err(error) = self.socket.send(message).await {
            tracing::warn!(%error, seq, "cannot publish a KV-cache event batch");
        }
        if self.max_buffered > 0 {
            let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
            if buffer.len() == self.max_buffered {
                buffer.pop_front();
            }
            buffer.push_back((seq, payload));
        }
    }
}

/// Answers replay requests: `[identity, "", start seq]` (a REQ client) or `[identity, start
/// seq]` (a DEALER that sends no delimiter).
async fn serve_replays(mut send: RouterSendHalf, mut recv: RouterRecvHalf, buffer: ReplayBuffer) {
    loop {
        let request = match recv.recv().await {
            Ok(request) => request.into_vec(),
            Err(error) => {
                tracing::debug!(%error, "KV-events replay socket closed");
                return;
            }
        };
        let Some((identity, start_seq, delimited)) = parse_replay_request(&request) else {
            tracing::warn!(
                frames = request.len(),
                "ignoring a malformed KV-events replay request"
            );
            continue;
        };
        let kept: Vec<(u64, Bytes)> = {
            let buffer = buffer.lock().unwrap_or_else(|p| p.into_inner());
            buffer
                .iter()
                .filter(|(seq, _)| *seq >= start_seq)
                .cloned()
                .collect()
        };
        let replies = kept
            .into_iter()
            .map(|(seq, payload)| (Bytes::copy_from_slice(&seq.to_be_bytes()), payload))
            .chain([(
                Bytes::copy_from_slice(&END_OF_REPLAY.to_be_bytes()),
                Bytes::new(),
            )]);
        for (seq, payload) in replies {
            let mut frames = vec![identity.clone()];
            if delimited {
                frames.push(Bytes::new());
            }
            frames.extend([seq, payload]);
            let message = ZmqMessage::try_from(frames).expect("frames");
            if let Err(error) = send.send(message).await {
                tracing::warn!(%error, "cannot answer a KV-events replay request");
                break;
            }
        }
    }
}

/// The requester, its start sequence number and whether it framed the request with an empty
/// delimiter (REQ does; replies must then carry one too).
fn parse_replay_request(frames: &[Bytes]) -> Option<(Bytes, u64, bool)> {
    let (identity, delimited, seq) = match frames {
        [identity, empty, seq] if empty.is_empty() => (identity, true, seq),
        [identity, seq] => (identity, false, seq),
        _ => return None,
    };
    let seq: [u8; 8] = seq.as_ref().try_into().ok()?;
    Some((identity.clone(), u64::from_be_bytes(seq), delimited))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_requests_from_req_and_dealer_clients() {
        let id = Bytes::from_static(b"peer");
        let seq = Bytes::copy_from_slice(&5u64.to_be_bytes());
        assert_eq!(
            parse_replay_request(&[id.clone(), Bytes::new(), seq.clone()]),
            Some((id.clone(), 5, true))
        );
        assert_eq!(
            parse_replay_request(&[id.clone(), seq]),
            Some((id.clone(), 5, false))
        );
        assert_eq!(
            parse_replay_request(&[id.clone(), Bytes::from_static(b"short")]),
            None
        );
        assert_eq!(parse_replay_request(&[id]), None);
    }
}
