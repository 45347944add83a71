#!/usr/bin/env python3
"""The client of bench/predicted_outputs_cpu.sh: sends each chat request of a workload (the
JSONL of bench/spec_decode_workload.py) one after the other, greedy and streamed, with or
without OpenAI's `prediction` (the passage the prompt quotes: what an editor sends as the text
it expects back), and prints one JSON line per request: TTFT, TPOT, tokens, the accepted and
rejected proposals of its usage, and its text.

    bench/predicted_outputs_client.py URL WORKLOAD.jsonl [--predict] [--max-tokens 128]
"""
import argparse
import json
import time
import urllib.request


def stream_chat(url: str, body: dict) -> dict:
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    first = last = None
    text, usage = [], {}
    with urllib.request.urlopen(request) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices", []):
                piece = choice.get("delta", {}).get("content")
                if piece:
                    now = time.perf_counter()
                    first = first if first is not None else now
                    last = now
                    text.append(piece)
    tokens = usage.get("completion_tokens", 0)
    details = usage.get("completion_tokens_details") or {}
    return {
        "ttft_ms": (first - started) * 1e3 if first else None,
        "tpot_ms": (last - first) * 1e3 / (tokens - 1) if first and tokens > 1 else None,
        "completion_tokens": tokens,
        "accepted": details.get("accepted_prediction_tokens"),
        "rejected": details.get("rejected_prediction_tokens"),
        "text": "".join(text),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("workload")
    parser.add_argument("--predict", action="store_true")
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    for line in open(args.workload):
        messages = json.loads(line)["messages"]
        body = {"messages": messages, "max_tokens": args.max_tokens, "temperature": 0,
                "stream": True, "stream_options": {"include_usage": True}}
        if args.predict:
            # The passage after the task's first paragraph: the text the answer repeats.
            passage = messages[-1]["content"].split("\n\n", 1)[1]
            body["prediction"] = {"type": "content", "content": passage}
        print(json.dumps(stream_chat(args.url.rstrip("/"), body)), flush=True)


if __name__ == "__main__":
    main()
