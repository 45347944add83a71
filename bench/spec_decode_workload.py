#!/usr/bin/env python3
"""Writes the prompt-copying workload of bench/spec_decode_cpu.sh: a custom JSONL for
`pagoda-bench serve --dataset-name custom`, one chat request per line. Each asks the model to
repeat, extract from or lightly edit a ~512-token passage of bench/workloads/gpl-3.0.txt (a fixed,
verbatim English text), so much of the answer is a span of the prompt — the case prompt lookup
(n-gram speculative decoding) is for.

    bench/spec_decode_workload.py OUT.jsonl [--num-prompts 16] [--passage-words 380] [--seed 0]
"""
import argparse
import json
import random
from pathlib import Path

TASKS = [
    "Repeat the following passage exactly, word for word, with nothing before or after it.",
    "Copy out the passage below verbatim, keeping its line breaks.",
    "Rewrite the passage below with every occurrence of \"License\" replaced by \"Licence\"; "
    "change nothing else.",
    "Quote the first three paragraphs of the passage below exactly as written.",
]


def passages(text: str, num_words: int, count: int, rng: random.Random) -> list[str]:
    words = text.split(" ")
    out = []
    for _ in range(count):
        start = rng.randrange(0, len(words) - num_words)
        out.append(" ".join(words[start:start + num_words]).strip())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--num-prompts", type=int, default=16)
    parser.add_argument("--passage-words", type=int, default=380)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    root = Path(__file__).resolve().parent
    text = (root / "workloads" / "gpl-3.0.txt").read_text()
    rng = random.Random(args.seed)
    with open(args.out, "w") as out:
        for i, passage in enumerate(passages(text, args.passage_words, args.num_prompts, rng)):
            task = TASKS[i % len(TASKS)]
            line = {"messages": [{"role": "user", "content": f"{task}\n\n{passage}"}]}
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
