"""Two pagoda-server replicas of the default model behind a small picker that routes by their
KV-cache events, the way llm-d's precise prefix scorer does: it keeps, per replica, the token
prefix every stored block hash stands for (from BlockStored's token ids and parent hash) and
sends a request to the replica holding its longest prefix. The next turn of a conversation must
land on the replica that served the first, be served from its cache (usage.cached_tokens) and
show it in its time to first token against the other replica. This tests our events, not a
router we ship. The Rust driver (server/tests/kv_events.rs) sets:

PAGODA_REPLICA_URLS, PAGODA_KV_EVENTS_ENDPOINTS, PAGODA_KV_TOPICS (comma-separated, one per
replica), PAGODA_MODEL_NAME.
"""

import json
import random
import time
import unittest
import urllib.request

import zmq

from kv_events_client import CacheView, Subscriber, env, http_json, wait_for_batches

BLOCK_SIZE = 16
SYSTEM_TOKENS = 1200


class Replica:
    def __init__(self, context, url, endpoint, topic):
        self.url = url
        self.subscriber = Subscriber(context, endpoint, topic)
        self.view = CacheView()
        self.num_applied = 0

    def refresh(self):
        """Applies every batch published so far, in order."""
        wait_for_batches(self.subscriber, f"{self.url}/metrics")
        batches = self.subscriber.in_order()
        self.view.apply(batches[self.num_applied :])
        self.num_applied = len(batches)


class KvEventsRoutingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = env("PAGODA_MODEL_NAME")
        cls.context = zmq.Context()
        urls = env("PAGODA_REPLICA_URLS").split(",")
        endpoints = env("PAGODA_KV_EVENTS_ENDPOINTS").split(",")
        topics = env("PAGODA_KV_TOPICS").split(",")
        cls.replicas = [
            Replica(cls.context, u, e, t) for u, e, t in zip(urls, endpoints, topics)
        ]
        for replica in cls.replicas:
            replica.subscriber.handshake(
                lambda url=replica.url: http_json(f"{url}/reset_prefix_cache", {})
            )
        cls.rng = random.Random(11)

    @classmethod
    def tearDownClass(cls):
        for replica in cls.replicas:
            replica.subscriber.close()
        cls.context.term()

    def pick(self, token_ids):
        """The replica with the longest cached prefix; on a tie, the one caching least."""
        for replica in self.replicas:
            replica.refresh()
        scores = [
            (r.view.cached_prefix_tokens(token_ids, BLOCK_SIZE), -len(r.view.prefixes), -i)
            for i, r in enumerate(self.replicas)
        ]
        best = max(scores)
        return -best[2], best[0]

    def complete(self, replica, prompt):
        """Streams a completion; returns (prompt + output tokens, usage, seconds to first token)."""
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 8,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_token_ids": True,
        }
        request = urllib.request.Request(
            f"{replica.url}/v1/completions",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        started = time.monotonic()
        ttft, output, usage = None, [], None
        with urllib.request.urlopen(request, timeout=300) as response:
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data: ") :])
                for choice in chunk.get("choices", []):
                    if choice.get("token_ids"):
                        ttft = ttft if ttft is not None else time.monotonic() - started
                        output.extend(choice["token_ids"])
                usage = chunk.get("usage") or usage
        self.assertIsNotNone(ttft, "the stream carried tokens")
        return prompt + output, usage, ttft

    def tokens(self, count):
        return [self.rng.randrange(100, 40000) for _ in range(count)]

    def conversation(self, expected_first):
        system = self.tokens(SYSTEM_TOKENS)
        first_turn = system + self.tokens(30)
        index, cached = self.pick(first_turn)
        self.assertEqual((index, cached), (expected_first, 0), "a cold prefix goes to the emptier replica")
        history, usage, _ = self.complete(self.replicas[index], first_turn)
        self.assertEqual(usage["prompt_tokens_details"]["cached_tokens"], 0)

        second_turn = history + self.tokens(25)
        index, cached = self.pick(second_turn)
        self.assertEqual(index, expected_first, "the next turn goes where its prefix is")
        self.assertGreaterEqual(cached, SYSTEM_TOKENS // BLOCK_SIZE * BLOCK_SIZE)
        _, hit_usage, hit_ttft = self.complete(self.replicas[index], second_turn)
        self.assertEqual(hit_usage["prompt_tokens_details"]["cached_tokens"], cached)
        other = self.replicas[1 - index]
        _, miss_usage, miss_ttft = self.complete(other, second_turn)
        self.assertEqual(miss_usage["prompt_tokens_details"]["cached_tokens"], 0)
        self.assertLess(hit_ttft, miss_ttft, f"hit {hit_ttft:.3f} s vs miss {miss_ttft:.3f} s")
        print(f"turn 2: cached {cached} tokens, TTFT {hit_ttft:.3f} s on its replica, {miss_ttft:.3f} s on the other")

    def test_each_conversation_returns_to_its_replica(self):
        self.conversation(expected_first=0)
        # Replica 1 now also caches conversation 1's second turn (the miss above); a new
        # conversation still starts on the replica caching less, then stays there.
        for replica in self.replicas:
            replica.refresh()
        emptier = min(range(2), key=lambda i: (len(self.replicas[i].view.prefixes), i))
        self.conversation(expected_first=emptier)


if __name__ == "__main__":
    unittest.main()
