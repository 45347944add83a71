#!/usr/bin/env python3
"""Summarises bench/gpu/profile.sh's output: where a decode step's GPU time goes.

    python3 bench/gpu/profile_summary.py DIR > DIR/summary.md

For each `ncu_b<B>.csv.gz` in DIR (ncu's --csv output, one line per kernel in launch order, the
program's own output lines mixed in), the greedy serving steps are found as the kernels between
consecutive argmax launches (one per greedy step), the last `--steps` of them are averaged, and
the per-kernel table (launches per step, µs per step, share) is printed beside the unprofiled
step time of `decode_b<B>.jsonl` (greedy_step_ms_p50): the difference is what the host adds.
"""
import argparse
import collections
import csv
import glob
import gzip
import io
import json
import os
import re


def kernels(path):
    """(name, duration in µs) of every profiled kernel, in launch order."""
    lines = [line for line in gzip.open(path, "rt") if line.startswith('"')]
    out = []
    for row in csv.DictReader(io.StringIO("".join(lines))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(row.get("Metric Unit"), 1e-3)
        out.append((row["Kernel Name"], value * scale))
    return out


def short_name(name):
    return re.sub(r"\(.*", "", name).replace("void ", "")[:70]


def greedy_steps(launches):
    """Kernel lists of the greedy steps: between consecutive argmax launches."""
    ends = [i for i, (name, _) in enumerate(launches) if "argmax" in name]
    return [launches[a + 1:b + 1] for a, b in zip(ends, ends[1:])]


def section(folder, batch, num_steps):
    launches = kernels(os.path.join(folder, f"ncu_b{batch}.csv.gz"))
    steps = greedy_steps(launches)[-num_steps:]
    out = [f"### Batch {batch}", ""]
    if not steps:
        return out + ["No greedy steps found (no argmax launches)."]
    wall = None
    jsonl = os.path.join(folder, f"decode_b{batch}.jsonl")
    if os.path.exists(jsonl):
        for line in open(jsonl):
            record = json.loads(line)
            if record.get("batch_size") == batch:
                wall = record.get("greedy_step_ms_p50")
    per_kernel = collections.defaultdict(lambda: [0, 0.0])
    for step in steps:
        for name, micros in step:
            entry = per_kernel[short_name(name)]
            entry[0] += 1
            entry[1] += micros
    total = sum(micros for step in steps for _, micros in step) / len(steps)
    launches_per_step = sum(len(step) for step in steps) / len(steps)
    text = (f"{len(steps)} greedy decode steps: {launches_per_step:.0f} kernels, "
            f"{total:,.0f} µs of kernel time per step")
    if wall:
        text += f"; the unprofiled step takes {wall * 1e3:,.0f} µs (host share {max(0.0, 1 - total / (wall * 1e3)):.0%})"
    out += [text + ".", "", "| kernel | launches / step | µs / step | share |", "|---|---|---|---|"]
    for name, (count, micros) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1]):
        out.append(f"| `{name}` | {count / len(steps):g} | {micros / len(steps):,.1f} | {micros / len(steps) / total:.1%} |")
    return out + [""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    batches = sorted(int(re.search(r"ncu_b(\d+)", p).group(1)) for p in glob.glob(os.path.join(args.folder, "ncu_b*.csv.gz")))
    lines = ["## Where a decode step's GPU time goes (`bench/gpu/profile.sh`)", ""]
    for batch in batches:
        lines += section(args.folder, batch, args.steps)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
