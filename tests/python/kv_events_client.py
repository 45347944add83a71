"""A KV-cache event subscriber as a router writes one: pyzmq SUB + DEALER sockets, msgpack,
decoding by vLLM's published schema (vllm/distributed/kv_events.py, array_like structs):

    batch = [ts, [event, ...], data_parallel_rank]
    ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
     lora_name(, extra_keys)]
    ["BlockRemoved", block_hashes, medium]
    ["AllBlocksCleared"]

Shared by test_kv_events.py and test_kv_events_routing.py; not a test itself.
"""

import json
import os
import time
import urllib.request
from dataclasses import dataclass, field

import msgpack
import zmq

END_OF_REPLAY = -1


@dataclass
class Stored:
    block_hashes: list
    parent_block_hash: object
    token_ids: list
    block_size: int
    lora_id: object
    medium: object
    lora_name: object
    extra_keys: object = None


@dataclass
class Removed:
    block_hashes: list
    medium: object


@dataclass
class Cleared:
    pass


def decode_event(raw):
    tag, *fields = raw
    if tag == "BlockStored":
        if len(fields) not in (7, 8):
            raise AssertionError(f"BlockStored with {len(fields)} fields: {raw!r}")
        return Stored(*fields)
    if tag == "BlockRemoved":
        return Removed(*fields)
    if tag == "AllBlocksCleared":
        if fields:
            raise AssertionError(f"AllBlocksCleared with fields: {raw!r}")
        return Cleared()
    raise AssertionError(f"unknown event tag {tag!r}")


@dataclass
class Batch:
    seq: int
    ts: float
    events: list
    data_parallel_rank: int
    payload: bytes


def decode_batch(seq, payload):
    ts, events, rank = msgpack.unpackb(payload, raw=False)
    return Batch(seq, ts, [decode_event(e) for e in events], rank, payload)


class Subscriber:
    """A SUB socket on `endpoint` filtered by `topic`, with a DEALER for replays."""

    def __init__(self, context, endpoint, topic, replay_endpoint=None):
        self.topic = topic.encode()
        self.sub = context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.connect(endpoint)
        self.sub.setsockopt(zmq.SUBSCRIBE, self.topic)
        self.replay_endpoint = replay_endpoint
        self.context = context
        self.batches = {}

    def close(self):
        self.sub.close()

    def handshake(self, trigger, deadline_s=30):
        """Calls `trigger` (something that makes the engine publish a batch) until this
        subscriber receives one: from then on its subscription is live (a SUB socket's
        subscription reaches the publisher a moment after it connects, and PUB drops what no
        subscription matches)."""
        deadline = time.monotonic() + deadline_s
        while True:
            trigger()
            if self.poll(200):
                return
            if time.monotonic() > deadline:
                raise AssertionError("the subscription never became live")

    def poll(self, timeout_ms=200):
        """Receives whatever arrives within `timeout_ms` of the last message."""
        received = []
        while self.sub.poll(timeout_ms):
            topic, seq_bytes, payload = self.sub.recv_multipart()
            if topic != self.topic:
                raise AssertionError(f"topic {topic!r}, subscribed to {self.topic!r}")
            batch = decode_batch(int.from_bytes(seq_bytes, "big"), payload)
            self.batches[batch.seq] = batch
            received.append(batch)
        return received

    def replay(self, start_seq):
        """Asks for every kept batch from `start_seq` on (vLLM's replay protocol)."""
        dealer = self.context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(self.replay_endpoint)
        dealer.send_multipart([b"", start_seq.to_bytes(8, "big")])
        replayed = []
        try:
            while True:
                if not dealer.poll(5000):
                    raise AssertionError("the replay never ended")
                empty, seq_bytes, payload = dealer.recv_multipart()
                if empty != b"":
                    raise AssertionError("replies carry the request's empty delimiter")
                seq = int.from_bytes(seq_bytes, "big", signed=True)
                if seq == END_OF_REPLAY:
                    if payload != b"":
                        raise AssertionError("the end marker has an empty payload")
                    return replayed
                batch = decode_batch(seq, payload)
                self.batches.setdefault(seq, batch)
                replayed.append(batch)
        finally:
            dealer.close()

    def in_order(self):
        """All batches by sequence number; fails on a gap."""
        seqs = sorted(self.batches)
        if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            raise AssertionError(f"gaps in {seqs}")
        return [self.batches[s] for s in seqs]


@dataclass
class CacheView:
    """What a router believes one replica caches, from its events."""

    # engine block hash -> every token up to and including that block
    prefixes: dict = field(default_factory=dict)
    num_removed: int = 0

    def apply(self, batches):
        for batch in batches:
            for event in batch.events:
                self.apply_event(event)
        return self

    def apply_event(self, event):
        if isinstance(event, Stored):
            if event.parent_block_hash is None:
                prefix = ()
            else:
                prefix = self.prefixes[event.parent_block_hash]
            size = event.block_size
            for i, block_hash in enumerate(event.block_hashes):
                prefix = prefix + tuple(event.token_ids[i * size:(i + 1) * size])
                if block_hash in self.prefixes:
                    raise AssertionError(f"block {block_hash} stored twice")
                self.prefixes[block_hash] = prefix
        elif isinstance(event, Removed):
            for block_hash in event.block_hashes:
                if block_hash not in self.prefixes:
                    raise AssertionError(f"block {block_hash} removed but never stored")
                del self.prefixes[block_hash]
                self.num_removed += 1
        else:
            self.prefixes.clear()

    def cached_prefix_tokens(self, token_ids, block_size):
        """Tokens of the longest run of whole blocks starting `token_ids` that this replica holds."""
        held = set(self.prefixes.values())
        best = 0
        for end in range(block_size, len(token_ids) + 1, block_size):
            if tuple(token_ids[:end]) in held:
                best = end
        return best


def http_json(url, body=None, api_key=None, timeout=120):
    headers = {"content-type": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def metric(metrics_url, name):
    """The sum of a series' samples on /metrics."""
    with urllib.request.urlopen(metrics_url, timeout=30) as response:
        text = response.read().decode()
    total, found = 0.0, False
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
            found = True
    if not found:
        raise AssertionError(f"{name} is not on {metrics_url}")
    return total


def wait_for_batches(subscriber, metrics_url, deadline_s=30):
    """Receives until the subscriber holds as many batches as the engine says it made."""
    deadline = time.monotonic() + deadline_s
    while True:
        subscriber.poll(200)
        made = metric(metrics_url, "pagoda:kv_event_batches_total")
        num_seen = max(subscriber.batches) + 1 if subscriber.batches else 0
        if num_seen >= made:
            return int(made)
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(subscriber.batches)} batches received, {made} made")


def env(name):
    value = os.environ.get(name)
    if not value:
        raise AssertionError(f"{name} is not set (the Rust driver sets it)")
    return value
