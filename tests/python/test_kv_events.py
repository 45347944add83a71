"""KV-cache events of a running pagoda-server, read the way llm-d's and Dynamo's routers read
them (kv_events_client.py: pyzmq + msgpack by vLLM's schema). The Rust driver
(server/tests/kv_events.rs) starts the server on the mock engine with a small KV cache
(22 blocks of 16 tokens) and --kv-events-config, and sets:

PAGODA_BASE_URL, PAGODA_METRICS_URL, PAGODA_KV_EVENTS_ENDPOINT, PAGODA_KV_REPLAY_ENDPOINT,
PAGODA_KV_TOPIC, PAGODA_MODEL_NAME.
"""

import copy
import random
import time
import unittest

import zmq

from kv_events_client import (
    CacheView,
    Cleared,
    Removed,
    Stored,
    Subscriber,
    env,
    http_json,
    metric,
    wait_for_batches,
)

BLOCK_SIZE = 16


class KvEventsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base_url = env("PAGODA_BASE_URL")
        cls.metrics_url = env("PAGODA_METRICS_URL")
        cls.endpoint = env("PAGODA_KV_EVENTS_ENDPOINT")
        cls.replay_endpoint = env("PAGODA_KV_REPLAY_ENDPOINT")
        cls.topic = env("PAGODA_KV_TOPIC")
        cls.model = env("PAGODA_MODEL_NAME")
        cls.context = zmq.Context()
        cls.rng = random.Random(7)

    @classmethod
    def tearDownClass(cls):
        cls.context.term()

    def subscriber(self, trigger=None):
        """A live subscriber; by default the handshake resets the prefix cache."""
        sub = Subscriber(self.context, self.endpoint, self.topic, self.replay_endpoint)
        sub.handshake(trigger or self.reset_cache)
        return sub

    def complete(self, prompt, max_tokens=4):
        reply = http_json(
            f"{self.base_url}/completions",
            {
                "model": self.model,
                "prompt": prompt,
                "max_tokens": max_tokens,
                "return_token_ids": True,
            },
        )
        choice = reply["choices"][0]
        self.assertEqual(choice["prompt_token_ids"], prompt)
        return prompt + choice["token_ids"], reply["usage"]

    def random_tokens(self, count):
        return [self.rng.randrange(1, 250) for _ in range(count)]

    def reset_cache(self):
        http_json(f"{self.base_url.removesuffix('/v1')}/reset_prefix_cache", {})

    def evictions(self):
        return metric(self.metrics_url, "pagoda:prefix_cache_evictions_total")

    def check_against_metrics(self, batches, evictions_before):
        """`batches` from a reset on, when the eviction counter stood at `evictions_before`."""
        view = CacheView().apply(batches)
        self.assertEqual(len(view.prefixes), metric(self.metrics_url, "pagoda:num_cached_kv_blocks"))
        self.assertEqual(view.num_removed, self.evictions() - evictions_before)
        self.assertEqual(metric(self.metrics_url, "pagoda:kv_event_batches_dropped_total"), 0)
        return view

    def test_1_events_match_the_prefix_cache_and_replay_fills_a_restart(self):
        first = self.subscriber()
        evictions_before = self.evictions()
        system = self.random_tokens(6 * BLOCK_SIZE)
        sequences = []
        # A conversation sharing a 96-token prefix, then unrelated prompts that evict it.
        for turn in range(3):
            tokens, usage = self.complete(system + self.random_tokens(10 + 7 * turn))
            sequences.append(tokens)
            cached = usage["prompt_tokens_details"]["cached_tokens"]
            self.assertEqual(cached, 0 if turn == 0 else len(system), usage)
        for _ in range(5):
            sequences.append(self.complete(self.random_tokens(100))[0])
        wait_for_batches(first, self.metrics_url)
        batches = from_last_reset(first.in_order())
        view = self.check_against_metrics(batches, evictions_before)
        self.assertGreater(view.num_removed, 0, "the small cache must have evicted blocks")
        self.check_shapes(batches, sequences)
        # The second turn's new blocks chain onto the shared prefix's last block.
        stored = [e for b in batches for e in b.events if isinstance(e, Stored)]
        chained = [e for e in stored if e.parent_block_hash is not None]
        self.assertTrue(chained, "later turns store blocks after the cached prefix")

        # The subscriber goes away; requests go on; a new one replays what it missed.
        last_seen = max(first.batches)
        first.close()
        for _ in range(3):
            sequences.append(self.complete(self.random_tokens(50))[0])
        # Its handshake stores blocks instead of resetting, so the history since the first
        # reset stays whole.
        restarted = self.subscriber(
            lambda: sequences.append(self.complete(self.random_tokens(20))[0])
        )
        restarted.batches.update(first.batches)
        sequences.append(self.complete(self.random_tokens(40))[0])
        wait_for_batches(restarted, self.metrics_url)
        live = [s for s in restarted.batches if s > last_seen]
        self.assertGreater(min(live), last_seen + 1, "batches were published while nobody listened")
        replayed = restarted.replay(last_seen + 1)
        self.assertEqual([b.seq for b in replayed][0], last_seen + 1)
        for batch in replayed:
            if batch.seq in first.batches:
                self.assertEqual(batch.payload, first.batches[batch.seq].payload)
        self.check_against_metrics(from_last_reset(restarted.in_order()), evictions_before)
        restarted.close()

    def check_shapes(self, batches, sequences):
        now = time.time()
        for batch in batches:
            self.assertEqual(batch.data_parallel_rank, 0)
            self.assertLess(abs(batch.ts - now), 600)
            for event in batch.events:
                if isinstance(event, Stored):
                    self.assertEqual(event.block_size, BLOCK_SIZE)
                    self.assertEqual(len(event.token_ids), BLOCK_SIZE * len(event.block_hashes))
                    self.assertEqual(event.medium, "CPU")
                    self.assertIsNone(event.lora_id)
                    self.assertIsNone(event.lora_name)
                    self.assertTrue(all(isinstance(h, int) for h in event.block_hashes))
                    if event.parent_block_hash is None:
                        self.assertTrue(
                            any(s[: len(event.token_ids)] == event.token_ids for s in sequences),
                            "a run without a parent starts a request's tokens",
                        )
                elif isinstance(event, Removed):
                    self.assertEqual(event.medium, "CPU")

    def test_2_a_stuck_subscriber_costs_the_others_nothing(self):
        stuck = self.context.socket(zmq.SUB)
        stuck.setsockopt(zmq.RCVHWM, 1)
        stuck.setsockopt(zmq.RCVBUF, 4096)
        stuck.connect(self.endpoint)
        stuck.setsockopt(zmq.SUBSCRIBE, b"")
        reader = self.subscriber()
        before = metric(self.metrics_url, "pagoda:kv_event_batches_total")
        for _ in range(40):
            self.complete(self.random_tokens(120), max_tokens=8)
        made = wait_for_batches(reader, self.metrics_url)
        seqs = sorted(s for s in reader.batches if s >= before)
        self.assertEqual(seqs, list(range(int(before), made)), "the reader misses nothing")
        self.assertEqual(metric(self.metrics_url, "pagoda:kv_event_batches_dropped_total"), 0)
        stuck.close()
        reader.close()

    def test_3_a_reset_publishes_all_blocks_cleared(self):
        sub = self.subscriber()
        self.complete(self.random_tokens(40))
        self.reset_cache()
        wait_for_batches(sub, self.metrics_url)
        last = sub.batches[max(sub.batches)]
        self.assertIsInstance(last.events[-1], Cleared)
        self.assertEqual(metric(self.metrics_url, "pagoda:num_cached_kv_blocks"), 0)
        sub.close()


def from_last_reset(batches):
    """The batches from the last prefix-cache reset on (the reset's own events first), so that
    applying them needs no earlier state."""
    for i in reversed(range(len(batches))):
        events = batches[i].events
        cleared = [j for j, e in enumerate(events) if isinstance(e, Cleared)]
        if cleared:
            head = copy.copy(batches[i])
            head.events = events[cleared[-1]:]
            return [head] + batches[i + 1 :]
    raise AssertionError("no AllBlocksCleared: the test resets the cache first")


if __name__ == "__main__":
    unittest.main()
