#!/usr/bin/env python3
"""Reference streaming client: the approach of `vllm bench serve` (asyncio + aiohttp, one task per
request, Poisson arrivals by sleeping the inter-arrival gaps), reduced to what the client-capacity
benchmark compares: achieved vs target request rate, send lag, streamed chunks/s.

  python3 bench/reference_client.py --url http://127.0.0.1:8000 --rate 200 --num-requests 2000

Prints one JSON line. Send lag = actual send time - target send time, where the target times are
the cumulative sum of the drawn gaps from the start (what an exact client would send on)."""
import argparse
import asyncio
import json
import random
import time

import aiohttp


async def one_request(session, url, body, target_s, start, records):
    actual_s = time.perf_counter() - start
    chunks = 0
    first_chunk_s = None
    try:
        async with session.post(url, json=body) as response:
            if response.status != 200:
                records.append((target_s, actual_s, None, 0, f"http {response.status}"))
                return
            async for line in response.content:
                if line.startswith(b"data: {") and b'"text":"' in line and b'"text":""' not in line:
                    chunks += 1
                    if first_chunk_s is None:
                        first_chunk_s = time.perf_counter() - start
    except aiohttp.ClientError as error:
        records.append((target_s, actual_s, None, chunks, str(error)))
        return
    records.append((target_s, actual_s, first_chunk_s, chunks, None))


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    rank = p / 100 * (len(values) - 1)
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


async def main(args):
    rng = random.Random(args.seed)
    gaps = [rng.expovariate(args.rate) for _ in range(args.num_requests)]
    body = {"prompt": "Hello", "max_tokens": args.max_tokens, "ignore_eos": True,
            "stream": True, "temperature": 0}
    url = f"{args.url}/v1/completions"
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    records = []
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.perf_counter()
        target_s = 0.0
        tasks = []
        for gap in gaps:
            # vllm bench serve's loop: yield the request, then sleep the drawn interval.
            tasks.append(asyncio.create_task(one_request(session, url, body, target_s, start, records)))
            await asyncio.sleep(gap)
            target_s += gap
        await asyncio.gather(*tasks)
        elapsed_s = time.perf_counter() - start
    sends = [actual for _, actual, _, _, _ in records]
    lags_ms = [max(0.0, actual - target) * 1e3 for target, actual, _, _, _ in records]
    last_target_s = max(target for target, _, _, _, _ in records)
    send_span_s = max(sends) - min(sends)
    print(json.dumps({
        "client": "python-asyncio-aiohttp", "target_rate": args.rate,
        "num_requests": len(records), "num_errors": sum(1 for r in records if r[4]),
        "scheduled_rate": (len(sends) - 1) / last_target_s if last_target_s > 0 else float("nan"),
        "achieved_rate": (len(sends) - 1) / send_span_s if send_span_s > 0 else float("nan"),
        "target_span_s": last_target_s, "send_span_s": send_span_s,
        "p50_send_lag_ms": percentile(lags_ms, 50), "p99_send_lag_ms": percentile(lags_ms, 99),
        "max_send_lag_ms": max(lags_ms), "chunks": sum(r[3] for r in records),
        "chunks_per_s": sum(r[3] for r in records) / elapsed_s, "elapsed_s": elapsed_s,
    }))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--num-requests", type=int, default=1000)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
