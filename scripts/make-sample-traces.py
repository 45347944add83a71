#!/usr/bin/env python3
"""Write small sample traces in the formats `pagoda-bench serve --dataset-name trace` replays.

Real traces are large (thousands of requests for Mooncake's, millions of rows for BurstGPT);
tests and first tries need a few KB in the same format and with the same shape. Every file comes
from --seed alone (Python's standard library only; the draws use `random.Random.random()` and
`math.log`, whose results do not change between Python versions), so the same arguments always
write the same bytes.

Files written to --out-dir:

  mooncake_sample.jsonl        Mooncake: {"timestamp": ms, "input_length", "output_length",
                               "hash_ids"}, one hash id per 512-token block
  mooncake_small_blocks.jsonl  the same shape with 32-token blocks and short prompts, for a small
                               model on a CPU (replay with --trace-block-size 32)
  burstgpt_sample.csv          BurstGPT: Timestamp (s),Model,Request tokens,Response tokens,
                               Total tokens,Log Type; about 2% failed rows (Response tokens 0)
  azure_sample.csv             Azure LLM inference: TIMESTAMP (date, 7 fractional digits),
                               ContextTokens,GeneratedTokens

Shape: arrivals come in bursts (a burst of 2-8 requests a few ms apart, then a quiet gap), as in
the real traces. Mooncake requests reuse prefixes the way the real trace does: a few shared
system prompts (popular ones more often) and multi-turn sessions, whose next request repeats the
previous prompt's full blocks and adds new ones; hash ids are consecutive integers, a new one for
every new block (a partial last block gets a new id when the next turn completes it).
"""

import argparse
import json
import math
import os
import random

MOONCAKE_BLOCK_SIZE = 512


def exponential(rng, mean):
    return -mean * math.log(1.0 - rng.random())


def uniform_int(rng, low, high):
    """An integer in [low, high]."""
    return low + int(rng.random() * (high - low + 1))


def log_uniform_int(rng, low, high):
    """An integer in [low, high], log-uniform: short values common, long ones present."""
    return min(high, int(math.exp(math.log(low) + rng.random() * (math.log(high + 1) - math.log(low)))))


def bursty_arrivals(rng, num_requests, mean_gap_s):
    """Arrival times in seconds: bursts a few ms apart separated by exponential gaps."""
    times, now = [], 0.0
    while len(times) < num_requests:
        for _ in range(uniform_int(rng, 1, 8) if rng.random() < 0.4 else 1):
            times.append(now)
            now += exponential(rng, 0.004)
        now += exponential(rng, mean_gap_s)
    return times[:num_requests]


class HashIds:
    """Consecutive hash ids: the next new block gets the next integer."""

    def __init__(self):
        self.next_id = 0

    def new(self, count):
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        return ids


def mooncake_requests(rng, num_requests, block_size, max_new_blocks, max_output, mean_gap_s):
    ids = HashIds()
    system_prompts = [ids.new(uniform_int(rng, 1, 3)) for _ in range(4)]
    sessions = []  # Each session: the hash ids and input length of its last request.
    lines = []
    for arrival_s in bursty_arrivals(rng, num_requests, mean_gap_s):
        if sessions and rng.random() < 0.45:
            index = int(rng.random() * len(sessions))
            previous_ids, previous_length = sessions[index]
            full_blocks = previous_length // block_size
            hash_ids = previous_ids[:full_blocks] + ids.new(uniform_int(rng, 1, max_new_blocks))
        else:
            # Popular system prompts are used more often: weights 8, 4, 2, 1.
            pick = rng.random() * 15
            system = system_prompts[0 if pick < 8 else 1 if pick < 12 else 2 if pick < 14 else 3]
            hash_ids = system + ids.new(uniform_int(rng, 1, max_new_blocks))
            index = len(sessions)
            sessions.append(None)
        input_length = len(hash_ids) * block_size - uniform_int(rng, 0, block_size - 1)
        sessions[index] = (hash_ids, input_length)
        lines.append(
            json.dumps(
                {
                    "timestamp": int(arrival_s * 1000),
                    "input_length": input_length,
                    "output_length": log_uniform_int(rng, 1, max_output),
                    "hash_ids": hash_ids,
                }
            )
        )
    return "".join(line + "\n" for line in lines)


def burstgpt_rows(rng, num_requests):
    rows = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    for arrival_s in bursty_arrivals(rng, num_requests, 1.5):
        model = "ChatGPT" if rng.random() < 0.75 else "GPT-4"
        request_tokens = log_uniform_int(rng, 8, 4000)
        response_tokens = 0 if rng.random() < 0.02 else log_uniform_int(rng, 1, 1000)
        log_type = "Conversation log" if rng.random() < 0.8 else "API log"
        total = request_tokens + response_tokens
        rows.append(f"{int(arrival_s)},{model},{request_tokens},{response_tokens},{total},{log_type}")
    return "".join(row + "\n" for row in rows)


def azure_timestamp(start_s, offset_s):
    """`2023-11-16 18:15:46.6805900`: the day and hour fixed, minutes and seconds from the offset."""
    ticks = int(round((start_s + offset_s) * 10_000_000))  # 100 ns ticks past the hour
    seconds, fraction = divmod(ticks, 10_000_000)
    minutes, seconds = divmod(seconds, 60)
    return f"2023-11-16 18:{minutes:02d}:{seconds:02d}.{fraction:07d}"


def azure_rows(rng, num_requests):
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for arrival_s in bursty_arrivals(rng, num_requests, 0.25):
        context = log_uniform_int(rng, 16, 8000)
        generated = log_uniform_int(rng, 1, 600)
        rows.append(f"{azure_timestamp(15 * 60 + 46.68059, arrival_s)},{context},{generated}")
    return "".join(row + "\n" for row in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default="bench-client/tests/data/traces")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--num-requests", type=int, default=150, help="requests per trace")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    # One generator per file, so that changing one file's shape leaves the others as they were.
    files = {
        "mooncake_sample.jsonl": lambda rng: mooncake_requests(
            rng, args.num_requests, MOONCAKE_BLOCK_SIZE, 6, 800, 0.3
        ),
        "mooncake_small_blocks.jsonl": lambda rng: mooncake_requests(
            rng, args.num_requests, 32, 3, 8, 0.5
        ),
        "burstgpt_sample.csv": lambda rng: burstgpt_rows(rng, args.num_requests),
        "azure_sample.csv": lambda rng: azure_rows(rng, args.num_requests),
    }
    for index, (name, generate) in enumerate(files.items()):
        text = generate(random.Random(args.seed * 1000 + index))
        with open(os.path.join(args.out_dir, name), "w", newline="\n") as out:
            out.write(text)


if __name__ == "__main__":
    main()
