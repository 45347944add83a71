#!/usr/bin/env python3
"""Turns a results folder of bench/gpu/run.sh into a Markdown section for docs/PERFORMANCE.md.

    bench/gpu/summarize.py RESULTS_DIR > section.md

Standard library only (Python 3.9+). Every input is optional: a step that failed or did not run
leaves its section with a note instead of numbers. What it reads from RESULTS_DIR:

machine.txt
    `key: value` lines (gpu, driver, gpu_memory, date_utc, revision, ...) written by run.sh, up to
    the first line starting with "---" (raw tool output follows).
summary.json
    run.sh's record: {"revision", "started_utc", "quick", "device", "params": {...},
    "steps": [{"name", "status", "rc", "seconds"}]}.
decode_bench.jsonl  (benchmark 1; written by the engine example gpu_decode_bench)
    One header line, then one line per batch size:
      {"kind": "machine", "gpu": "NVIDIA H100 80GB HBM3", "measured_bandwidth_gbps": 3000.0}
      {"batch_size": B, "context_len": L, "step_ms_mean": .., "step_ms_p50": ..,
       "floor_ms": .., "weights_bytes": .., "kv_bytes_read": .., "bandwidth_gbps": ..}
    step_ms_*: time of one decode step of B sequences that each hold L tokens of context, the
    logits rows copied to the host; greedy_step_ms_* (absent before 2026-11-26's second run): the
    same step on the serving path, greedy tokens chosen on the GPU and only their ids copied;
    sampled_step_ms_* (from the fifth run on): the serving path with temperature 0.8 and top-p 0.95.
    weights_bytes + kv_bytes_read: the bytes one step has to read from HBM (every weight once,
    every sequence's KV cache once). floor_ms: those bytes at measured_bandwidth_gbps, the
    memory-bandwidth floor of the step. bandwidth_gbps: those bytes over the measured step time.
    GB are decimal (1e9 bytes), as GPU vendors quote bandwidth. Lines that are not JSON objects
    are skipped.
serve_<shape>.json  (benchmark 2)
    A `pagoda-bench serve --save-result` file: 32 concurrent requests, 128 prompt + 128 output
    tokens. Compared with the published H100 figures in ANCHORS.
sweep_<shape>/summary.json  (benchmark 3)
    The `pagoda-bench sweep --request-rates` summary: rows per offered rate and the knee.
"""

import argparse
import glob
import json
import os
import sys

# Output tokens/s of Llama-3.2-1B on one H100, 32 concurrent requests of 128 prompt + 128
# output tokens: the published reference figures benchmark 2 is compared with.
ANCHORS = [("vLLM", 10098.0), ("mistral.rs", 341.0)]
ANCHOR_SHAPE = "llama-3.2-1b"
# Benchmark 3's reference: the knee of Qwen3-0.6B, ~600-token prompts, ~30 output tokens.
KNEE_ANCHOR = "30–40 req/s on an A40"
LATENCY_NAMES = {"p99_ttft_ms": "p99 TTFT", "p99_tpot_ms": "p99 TPOT", "p99_itl_ms": "p99 ITL", "p99_e2el_ms": "p99 E2E latency"}


def fmt(value, unit=""):
    """A number the way docs/PERFORMANCE.md writes them: 1,356 / 302 / 10.1 / 0.42."""
    if value is None:
        return "—"
    value = float(value)
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return text + unit


def rate(value):
    """An offered request rate as given on the command line: 4, 0.5, 12.5."""
    return "—" if value is None else f"{float(value):g}"


def ratio(a, b):
    if a is None or not b:
        return "—"
    r = float(a) / float(b)
    return f"{r:.2f}×" if r < 10 else f"{r:.1f}×"


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_machine(folder):
    facts = {}
    try:
        with open(os.path.join(folder, "machine.txt"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("---"):
                    break
                key, sep, value = line.partition(":")
                if sep:
                    facts[key.strip()] = value.strip()
    except OSError:
        pass
    return facts


def read_decode_lines(path):
    """(header or None, rows sorted by batch size); (None, None) when the file is missing."""
    header, rows = None, []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError:
        return None, None
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if item.get("kind") == "machine":
            header = item
        elif "batch_size" in item:
            rows.append(item)
    rows.sort(key=lambda r: r["batch_size"])
    return header, rows


def steps_line(summary):
    steps = (summary or {}).get("steps") or []
    if not steps:
        return None
    parts = []
    for step in steps:
        status = step.get("status", "?")
        if status not in ("ok", "skipped") and step.get("rc") is not None:
            status = f"{status} (exit {step['rc']})"
        seconds = step.get("seconds")
        parts.append(f"{step.get('name')} {status}" + (f" in {seconds:.0f} s" if seconds is not None else ""))
    return "**Steps:** " + "; ".join(parts) + "."


def header_section(folder, machine, summary):
    out = []
    decode_header, _ = read_decode_lines(os.path.join(folder, "decode_bench.jsonl"))
    gpu = machine.get("gpu") or (summary or {}).get("gpu") or (decode_header or {}).get("gpu") or "unknown GPU"
    date = machine.get("date_utc") or (summary or {}).get("started_utc") or "unknown date"
    revision = machine.get("revision") or (summary or {}).get("revision", "unknown")
    day = f" ({date[:10]})" if date[:1].isdigit() else ""
    out.append(f"## GPU benchmarks: {gpu}{day}")
    out.append("")
    quick = "".join(f" --{flag}" for flag in ("quick", "smoke") if (summary or {}).get(flag))
    facts = [f"{gpu}"]
    for key, label in (("gpu_memory", ""), ("driver", "driver "), ("cuda", "CUDA ")):
        if machine.get(key):
            facts.append(label + machine[key])
    if machine.get("cpus"):
        facts.append(f"{machine['cpus']} CPUs")
    out.append(
        f"**Command:** `bench/gpu/run.sh{quick}` (raw results in `{folder.rstrip('/')}/`). "
        f"**Machine:** {', '.join(facts)}; {date}, build `{revision}`. "
        "Weights are random (`--load-format dummy`) in the published shapes "
        "(`bench/gpu/make_dummy_model.py`), in bfloat16: the speed is the real model's, the text "
        "is not."
    )
    line = steps_line(summary)
    if line:
        out.extend(["", line])
    return out


SHAPE_NAMES = {"llama-3.2-1b": "Llama-3.2-1B", "qwen3-0.6b": "Qwen3-0.6B"}


def decode_section(folder, summary):
    out = ["", "### Decode step time vs batch size (benchmark 1)", ""]
    shape = ((summary or {}).get("params") or {}).get("decode_shape", "llama-3.2-1b")
    header, rows = read_decode_lines(os.path.join(folder, "decode_bench.jsonl"))
    if rows is None:
        return out + ["No `decode_bench.jsonl`: the decode benchmark did not run (see `decode_bench.log`)."]
    if not rows:
        return out + ["`decode_bench.jsonl` has no result lines (see `decode_bench.log`)."]
    contexts = sorted({r.get("context_len") for r in rows if r.get("context_len") is not None})
    bandwidth = (header or {}).get("measured_bandwidth_gbps")
    context_text = ", ".join(str(c) for c in contexts) or "?"
    dtype = (header or {}).get("dtype", "bf16")
    out.append(
        f"{SHAPE_NAMES.get(shape, shape)} shape in {dtype}, one decode step of B sequences with {context_text} tokens of "
        "context each (`gpu_decode_bench`). The HBM floor is the bytes a step must read (every "
        "weight once, every sequence's KV cache once) at the measured bandwidth"
        + (f" ({fmt(bandwidth)} GB/s on this GPU)" if bandwidth else "")
        + "; floor ÷ step is the share of that floor reached."
    )
    out.append("")
    out.append("Steps return the logits rows to the host; the greedy columns time the serving path "
               "(argmax on the GPU, token ids copied) and the sampled column the same with temperature "
               "0.8 and top-p 0.95, where the kit measured them.")
    out.append("")
    out.append("| batch | step p50 | step mean | HBM floor | floor ÷ step | achieved GB/s | output tok/s "
               "| greedy step p50 | greedy tok/s | sampled step p50 | sampling cost |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        p50, mean, floor = r.get("step_ms_p50"), r.get("step_ms_mean"), r.get("floor_ms")
        step = p50 if p50 is not None else mean
        share = f"{100.0 * floor / step:.0f}%" if floor is not None and step else "—"
        tok_s = 1000.0 * r["batch_size"] / step if step else None
        greedy = r.get("greedy_step_ms_p50")
        greedy_tok_s = 1000.0 * r["batch_size"] / greedy if greedy else None
        sampled = r.get("sampled_step_ms_p50")
        cost = sampled - greedy if sampled is not None and greedy is not None else None
        out.append(
            f"| {r['batch_size']} | {fmt(p50, ' ms')} | {fmt(mean, ' ms')} | {fmt(floor, ' ms')} "
            f"| {share} | {fmt(r.get('bandwidth_gbps'))} | {fmt(tok_s)} "
            f"| {fmt(greedy, ' ms')} | {fmt(greedy_tok_s)} | {fmt(sampled, ' ms')} | {fmt(cost, ' ms')} |"
        )
    out += sampling_goal_lines(rows)
    return out


SAMPLING_GOAL_BATCH = 32
SAMPLING_GOAL_MS = 0.2


def sampling_goal_lines(rows):
    """The sampling issue's GPU goal: sampled minus greedy step at batch 32 (128k vocabulary)."""
    row = next((r for r in rows if r.get("batch_size") == SAMPLING_GOAL_BATCH), None)
    if row is None or row.get("sampled_step_ms_p50") is None or row.get("greedy_step_ms_p50") is None:
        return ["", f"Sampling cost at batch {SAMPLING_GOAL_BATCH}: not measured in this run."]
    cost = row["sampled_step_ms_p50"] - row["greedy_step_ms_p50"]
    verdict = "met" if cost <= SAMPLING_GOAL_MS else "not met"
    return ["", f"Sampling cost at batch {SAMPLING_GOAL_BATCH} (sampled − greedy step p50): "
            f"{fmt(cost, ' ms')}; goal ≤ {SAMPLING_GOAL_MS} ms: **{verdict}**."]


def integrity_note(result):
    integrity = ((result.get("pagoda") or {}).get("summary") or {}).get("integrity") or {}
    if integrity.get("fell_behind"):
        reasons = "; ".join(integrity.get("reasons") or [])
        return f"**The client fell behind** ({reasons}): these numbers understate the server."
    return None


def gpu_memory_lines(folder):
    """gpu_memory.tsv (run.sh): `when<TAB>used, total` in MiB, beside the promised share."""
    path = os.path.join(folder, "gpu_memory.tsv")
    if not os.path.exists(path):
        return []
    out = ["", "| GPU memory in use (serve step) | MiB | share of the GPU |", "|---|---|---|"]
    for line in open(path):
        when, _, values = line.rstrip("\n").partition("\t")
        try:
            used, total = (float(v) for v in values.split(","))
        except ValueError:
            continue
        out.append(f"| {when} | {fmt(used)} of {fmt(total)} | {100.0 * used / total:.1f}% |")
    out.append("")
    out.append("(`--gpu-memory-utilization 0.9` promises 90.0%, whatever else runs on the GPU.)")
    return out


def serve_section(folder):
    out = ["", "### Serving throughput at 32 concurrent requests (benchmark 2)", ""]
    paths = sorted(glob.glob(os.path.join(folder, "serve_*.json")))
    if not paths:
        return out + ["No `serve_*.json`: the serving benchmark did not finish (see `serve.log`)."]
    for path in paths:
        result = read_json(path)
        if not isinstance(result, dict):
            out.append(f"`{os.path.basename(path)}` is not a result file.")
            continue
        shape = result.get("shape") or os.path.basename(path)[len("serve_"):-len(".json")]
        completed, failed = result.get("completed"), result.get("failed")
        output_len = None
        if completed:
            output_len = (result.get("total_output_tokens") or 0) / completed
        input_len = (result.get("total_input_tokens") or 0) / completed if completed else None
        out.append(
            f"`{shape}` shape, `pagoda-bench serve` ({os.path.basename(path)}): "
            f"{result.get('num_prompts')} random prompts, at most {result.get('max_concurrency')} "
            f"in flight, {fmt(input_len)} prompt tokens (server count) and {fmt(output_len)} "
            f"output tokens per request (`ignore_eos`), {result.get('backend')} API, "
            f"{result.get('sampling') or 'greedy'} sampling. "
            f"{completed} completed, {failed} failed, in {fmt(result.get('duration'), ' s')}."
        )
        out.append("")
        tput = result.get("output_throughput")
        out.append("| server | output tok/s | Pagoda ÷ it |")
        out.append("|---|---|---|")
        out.append(f"| **Pagoda** (this run) | **{fmt(tput)}** | |")
        for name, value in ANCHORS:
            out.append(f"| {name} (published, Llama-3.2-1B, H100) | {fmt(value)} | {ratio(tput, value)} |")
        if shape != ANCHOR_SHAPE:
            out.append("")
            out.append(f"(The published figures are for {ANCHOR_SHAPE}; this run's shape is `{shape}`.)")
        out.append("")
        out.append("| | p50 | p99 | mean |")
        out.append("|---|---|---|---|")
        for metric, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2E latency")):
            p50 = result.get(f"p50_{metric}_ms", result.get(f"median_{metric}_ms"))
            p99, mean = result.get(f"p99_{metric}_ms"), result.get(f"mean_{metric}_ms")
            if p50 is None and p99 is None and mean is None:
                continue
            out.append(f"| {label} | {fmt(p50, ' ms')} | {fmt(p99, ' ms')} | {fmt(mean, ' ms')} |")
        note = integrity_note(result)
        if note:
            out.extend(["", note])
    return out


def sweep_section(folder, summary):
    out = ["", "### Request-rate sweep (benchmark 3)", ""]
    paths = sorted(glob.glob(os.path.join(folder, "sweep_*", "summary.json")))
    if not paths:
        return out + ["No `sweep_*/summary.json`: the sweep did not finish (see `sweep.log`)."]
    params = (summary or {}).get("params") or {}
    for path in paths:
        sweep = read_json(path)
        if not isinstance(sweep, dict):
            out.append(f"`{path}` is not a sweep summary.")
            continue
        shape = os.path.basename(os.path.dirname(path))[len("sweep_"):]
        axis = sweep.get("axis", "request_rate")
        rows = sweep.get("rows") or []
        described = [f"`{shape}` shape, `pagoda-bench sweep`"]
        if params.get("sweep_input_len"):
            described.append(f"{params['sweep_input_len']}-token random prompts")
        if params.get("sweep_output_len"):
            described.append(f"{params['sweep_output_len']} output tokens")
        described.append("Poisson arrivals")
        if params.get("sweep_duration_s"):
            described.append(f"{params['sweep_duration_s']} s of arrivals per rate")
        out.append(", ".join(described) + ".")
        out.append("")
        out.append("| offered req/s | achieved req/s | output tok/s | TTFT p50 | TTFT p99 | TPOT p50 | ITL p99 | errors |")
        out.append("|---|---|---|---|---|---|---|---|")
        for row in rows:
            errors = row.get("errors")
            out.append(
                f"| {rate(row.get(axis))} | {fmt(row.get('request_throughput'))} "
                f"| {fmt(row.get('output_throughput'))} | {fmt(row.get('p50_ttft_ms'), ' ms')} "
                f"| {fmt(row.get('p99_ttft_ms'), ' ms')} | {fmt(row.get('p50_tpot_ms'), ' ms')} "
                f"| {fmt(row.get('p99_itl_ms'), ' ms')} | {'—' if errors is None else f'{errors:.0f}'} |"
            )
        out.append("")
        knee = sweep.get("knee")
        criteria = sweep.get("knee_criteria") or {}
        if knee:
            at = next((r for r in rows if r.get(axis) == knee.get("load")), {})
            out.append(
                f"**Knee: {rate(knee.get('load'))} req/s offered** "
                f"({fmt(at.get('request_throughput'))} req/s achieved, "
                f"{fmt(knee.get('output_throughput'))} output tok/s, TTFT p50 "
                f"{fmt(at.get('p50_ttft_ms'), ' ms')} / p99 {fmt(at.get('p99_ttft_ms'), ' ms')}): "
                f"going to {rate(knee.get('next_load'))} req/s turned only "
                f"{knee.get('gain_ratio_pct', 0):.0f}% of the extra load into throughput while "
                f"{LATENCY_NAMES.get(criteria.get('latency_metric'), 'p99 TTFT')} rose "
                f"{knee.get('latency_rise_pct', 0):,.0f}%."
            )
        else:
            out.append(
                "**No knee:** throughput kept up with the offered load (or p99 TTFT did not rise) "
                "at every rate; sweep higher rates to find saturation."
            )
        out.append("")
        out.append(f"Published reference for this workload on Qwen3-0.6B: a knee at {KNEE_ANCHOR}.")
    return out


def markdown(folder):
    machine = read_machine(folder)
    summary = read_json(os.path.join(folder, "summary.json"))
    if not isinstance(summary, dict):
        summary = None
    lines = header_section(folder, machine, summary)
    lines += decode_section(folder, summary)
    lines += serve_section(folder)
    lines += gpu_memory_lines(folder)
    lines += sweep_section(folder, summary)
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", help="the folder run.sh wrote ($OUT)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.results_dir):
        print(f"summarize.py: {args.results_dir} is not a folder", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(args.results_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
