#!/usr/bin/env python3
"""The record of bench/cpu_vs_llamacpp.sh (python3 standard library only).

    cpu_vs_llamacpp_table.py OUT            # prints the markdown table (the script tees table.md)
    cpu_vs_llamacpp_table.py --write-meta OUT/meta.json     # from the script's environment

Reads OUT/meta.json, OUT/runs.tsv (scenario, server, repeat, result, peak_rss_kb, client_exit)
and each run's client result (`vllm bench serve` / `pagoda-bench serve --save-result`). With
several repeats every figure is the median over a server's runs. Ratios are ours / llama.cpp,
except the prefill speedup, llama.cpp's TTFT / ours. The issue's goals (#21), on the same run:
output tok/s >= 1.3x llama.cpp's in every scenario; TPOT p50 and ITL p99 <= llama.cpp's; peak RSS
<= llama.cpp's at the same KV capacity; the 2,048-token prompt's prefill >= 1.5x faster.
"""
import csv
import json
import os
import statistics
import sys

OURS, LLAMA = "pagoda", "llama.cpp"
MIN_THROUGHPUT_RATIO = 1.3
MIN_PREFILL_SPEEDUP = 1.5
# Both servers within this share of rate x output_len: neither fell behind the offered load.
OFFERED_LOAD_SHARE = 0.9
MET, NOT_MET, NO_DATA = "met", "**not met**", "no data"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def at_least(value, threshold):
    """A goal `value >= threshold` (value is a ratio; None when not measured)."""
    if value is None:
        return NO_DATA
    return MET if value >= threshold else NOT_MET


def at_most(ours, theirs):
    """A goal `ours <= theirs` (lower is better: latency, memory)."""
    if ours is None or theirs is None:
        return NO_DATA
    return MET if ours <= theirs else NOT_MET


def run_metrics(result, peak_rss_kb):
    """The figures of one run; None for what it lacks."""
    result = result or {}
    completed = result.get("completed")
    mean_input = ratio(result.get("total_input_tokens"), completed) if completed else None
    ttft_s = result["median_ttft_ms"] / 1e3 if result.get("median_ttft_ms") else None
    failed = result.get("failed")
    if failed is None and isinstance(result.get("errors"), list):
        failed = sum(1 for e in result["errors"] if e)
    return {
        "completed": completed,
        "failed": failed,
        "output_tok_s": result.get("output_throughput"),
        "ttft_p50_ms": result.get("median_ttft_ms"),
        "ttft_p99_ms": result.get("p99_ttft_ms"),
        "tpot_p50_ms": result.get("median_tpot_ms"),
        "itl_p99_ms": result.get("p99_itl_ms"),
        "peak_rss_kb": peak_rss_kb,
        "mean_input_tokens": mean_input,
        "prefill_tok_s": ratio(mean_input, ttft_s),
    }


def combine(runs):
    """Median of each figure over a server's runs; completed and failed are summed."""
    keys = runs[0].keys() if runs else run_metrics(None, None).keys()
    out = {k: median([r[k] for r in runs]) for k in keys}
    for k in ("completed", "failed"):
        counts = [r[k] for r in runs if r[k] is not None]
        out[k] = sum(counts) if counts else None
    out["num_runs"] = len(runs)
    return out


def goals(scenario, ours, llama):
    """{goal name: met / not met / no data} for one scenario."""
    marks = {
        "output tok/s >= 1.3x": at_least(ratio(ours["output_tok_s"], llama["output_tok_s"]), MIN_THROUGHPUT_RATIO),
        "TPOT p50 <=": at_most(ours["tpot_p50_ms"], llama["tpot_p50_ms"]),
        "ITL p99 <=": at_most(ours["itl_p99_ms"], llama["itl_p99_ms"]),
        "peak RSS <=": at_most(ours["peak_rss_kb"], llama["peak_rss_kb"]),
    }
    if scenario["name"].startswith("prefill"):
        marks["prefill >= 1.5x"] = at_least(prefill_speedup(ours, llama), MIN_PREFILL_SPEEDUP)
    return marks


def prefill_speedup(ours, llama):
    return ratio(llama["ttft_p50_ms"], ours["ttft_p50_ms"])


def at_offered_load(scenario, ours, llama):
    """The offered output tok/s of a rate scenario when both servers kept up with it, else None."""
    if not scenario.get("request_rate"):
        return None
    offered = scenario["request_rate"] * scenario["output_len"]
    served = [s["output_tok_s"] for s in (ours, llama)]
    if all(v is not None and v >= OFFERED_LOAD_SHARE * offered for v in served):
        return offered
    return None


def fmt(value, digits=1):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def pair(ours, theirs, digits=1):
    r = ratio(ours, theirs)
    r_text = "–" if r is None else f"{r:.2f}×"
    return f"{fmt(ours, digits)} / {fmt(theirs, digits)} ({r_text})"


def mib(kb):
    return None if kb is None else kb / 1024


def load_text(scenario):
    if scenario.get("request_rate"):
        return f"Poisson {scenario['request_rate']:g} req/s"
    return f"{scenario['max_concurrency']} at a time"


def requests_text(stats):
    return f"{fmt(stats['completed'], 0)}/{fmt(stats['failed'], 0)}"


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_runs(out_dir):
    """{(scenario, server): [run_metrics, ...]} from runs.tsv."""
    runs = {}
    with open(os.path.join(out_dir, "runs.tsv")) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            result = load_json(os.path.join(out_dir, row["result"]))
            peak = int(row["peak_rss_kb"]) if row["peak_rss_kb"] else None
            runs.setdefault((row["scenario"], row["server"]), []).append(run_metrics(result, peak))
    return runs


GOAL_NAMES = ["output tok/s >= 1.3x", "TPOT p50 <=", "ITL p99 <=", "peak RSS <=", "prefill >= 1.5x"]
FIGURES_HEADER = ["| scenario | load | in / out | ok/failed (ours · llama.cpp) | output tok/s | TTFT p50 ms | "
                  "TTFT p99 ms | TPOT p50 ms | ITL p99 ms | peak RSS MiB |", "|" + "---|" * 10]
PREFILL_HEADER = ["| scenario | prompt tokens | TTFT p50 ms | prefill tok/s | speedup (llama.cpp TTFT / ours) |",
                  "|---|---|---|---|---|"]
GOALS_HEADER = ["| scenario | " + " | ".join(GOAL_NAMES) + " |", "|" + "---|" * (len(GOAL_NAMES) + 1)]


def figures_row(scenario, ours, llama):
    return (f"| {scenario['name']} | {load_text(scenario)} | {scenario['input_len']} / {scenario['output_len']} | "
            f"{requests_text(ours)} · {requests_text(llama)} | "
            f"{pair(ours['output_tok_s'], llama['output_tok_s'])} | "
            f"{pair(ours['ttft_p50_ms'], llama['ttft_p50_ms'])} | {pair(ours['ttft_p99_ms'], llama['ttft_p99_ms'])} | "
            f"{pair(ours['tpot_p50_ms'], llama['tpot_p50_ms'], 2)} | {pair(ours['itl_p99_ms'], llama['itl_p99_ms'], 2)} | "
            f"{pair(mib(ours['peak_rss_kb']), mib(llama['peak_rss_kb']), 0)} |")


def prefill_row(scenario, ours, llama):
    speedup = prefill_speedup(ours, llama)
    return (f"| {scenario['name']} | {fmt(ours['mean_input_tokens'], 0)} / {fmt(llama['mean_input_tokens'], 0)} | "
            f"{pair(ours['ttft_p50_ms'], llama['ttft_p50_ms'])} | {pair(ours['prefill_tok_s'], llama['prefill_tok_s'])} | "
            f"{'–' if speedup is None else f'{speedup:.2f}×'} |")


def scenario_notes(scenario, ours, llama):
    notes = []
    offered = at_offered_load(scenario, ours, llama)
    if offered is not None:
        notes.append(f"{scenario['name']}: both servers kept up with the offered load ({offered:,.0f} output "
                     "tok/s), so its output tok/s ratio measures the load, not the servers.")
    for server, stats in ((OURS, ours), (LLAMA, llama)):
        if stats["num_runs"] == 0 or not stats["completed"] or stats["failed"]:
            notes.append(f"{scenario['name']}: {server} has failed or missing runs ({requests_text(stats)} "
                         f"ok/failed over {stats['num_runs']} runs); see logs/.")
    return notes


def render(meta, runs):
    """The markdown: set-up, figures, prefill, goals, notes."""
    figures, prefill, goal_rows = list(FIGURES_HEADER), list(PREFILL_HEADER), list(GOALS_HEADER)
    notes, num_met, num_goals = [], 0, 0
    for scenario in meta.get("scenarios", []):
        ours = combine(runs.get((scenario["name"], OURS), []))
        llama = combine(runs.get((scenario["name"], LLAMA), []))
        figures.append(figures_row(scenario, ours, llama))
        if scenario["name"].startswith("prefill"):
            prefill.append(prefill_row(scenario, ours, llama))
        marks = goals(scenario, ours, llama)
        goal_rows.append(f"| {scenario['name']} | " + " | ".join(marks.get(g, "n/a") for g in GOAL_NAMES) + " |")
        num_met += sum(1 for m in marks.values() if m == MET)
        num_goals += len(marks)
        notes += scenario_notes(scenario, ours, llama)
    lines = [f"# pagoda vs llama.cpp on CPU ({meta.get('date', '?')}, commit {meta.get('commit', '?')})", ""]
    lines += setup_lines(meta) + [""] + figures
    lines += ["", f"Cells: ours / llama.cpp (ours ÷ llama.cpp). Medians over {meta.get('repeats', 1)} run(s) "
              "per server; ok/failed summed over them.", ""]
    if len(prefill) > len(PREFILL_HEADER):
        lines += prefill + ["", "Prefill tok/s = the mean prompt tokens (the client's count) ÷ TTFT p50; "
                            "TTFT includes the HTTP round trip and the first output token.", ""]
    lines += goal_rows + ["", f"**Goals met: {num_met} of {num_goals}.**"]
    return "\n".join(lines + ([""] + [f"- {n}" for n in notes] if notes else []))


def setup_lines(meta):
    return [
        f"Machine: {meta.get('cpus', '?')} CPUs ({meta.get('cpu', '?')}). Model: `{os.path.basename(meta.get('model', '?'))}`. "
        f"Client: {meta.get('client_version', meta.get('client', '?'))}, `{meta.get('endpoint', '?')}`, random prompts, "
        f"ignore_eos, seed {meta.get('seed', '?')}, {meta.get('warmups', '?')} warm-up request(s) per run, "
        "each run on a freshly started server, ours then llama.cpp.",
        "",
        f"KV capacity: {meta.get('kv_tokens', '?')} tokens on both, {meta.get('num_slots', '?')} sequences of at "
        f"most {meta.get('slot_ctx', '?')} tokens (llama.cpp: {meta.get('num_slots', '?')} slots of "
        f"{meta.get('slot_ctx', '?')} cells, f16 K/V; ours: one paged pool, f32 K/V, "
        f"{meta.get('kv_bytes_per_token', '?')} bytes per token). Peak RSS: VmHWM of the server process.",
        "",
        f"- ours: `{meta.get('ours_command', '?')}`",
        f"- llama.cpp ({meta.get('llama_server_version', '?')}): `{meta.get('llama_command', '?')}`",
        f"- command: `{meta.get('command', '?')}`",
    ]


META_STRINGS = {"date": "META_DATE", "commit": "META_COMMIT", "command": "COMMAND", "cpu": "META_CPU",
                "model": "MODEL", "client": "CLIENT", "client_version": "CLIENT_VERSION",
                "llama_server": "LLAMA_SERVER", "llama_server_version": "META_LLAMA_VERSION",
                "endpoint": "ENDPOINT", "ours_command": "META_OURS", "llama_command": "META_LLAMA"}
META_INTEGERS = {"cpus": "META_CPUS", "seed": "SEED", "warmups": "WARMUPS", "repeats": "REPEATS",
                 "threads": "THREADS", "num_slots": "NUM_SLOTS", "slot_ctx": "SLOT_CTX",
                 "kv_tokens": "KV_TOKENS", "kv_bytes_per_token": "KV_BYTES_PER_TOKEN"}


def meta_from_env(env):
    """meta.json from bench/cpu_vs_llamacpp.sh's variables (META_SCENARIOS: `name input output
    concurrency rate num_prompts` lines; concurrency 0 = none, rate inf = closed loop)."""
    meta = {key: env.get(name, "") for key, name in META_STRINGS.items()}
    meta.update({key: int(env[name]) for key, name in META_INTEGERS.items()})
    meta["scenarios"] = []
    for line in env.get("META_SCENARIOS", "").splitlines():
        name, input_len, output_len, concurrency, rate, num_prompts = line.split()
        meta["scenarios"].append({
            "name": name, "input_len": int(input_len), "output_len": int(output_len),
            "max_concurrency": int(concurrency) or None,
            "request_rate": None if rate == "inf" else float(rate),
            "num_prompts": int(env.get("NUM_PROMPTS") or num_prompts)})
    return meta


def main(argv):
    if len(argv) == 3 and argv[1] == "--write-meta":
        with open(argv[2], "w") as f:
            json.dump(meta_from_env(os.environ), f, indent=1)
        return
    if len(argv) != 2:
        sys.exit(__doc__)
    out_dir = argv[1]
    print(render(load_json(os.path.join(out_dir, "meta.json")) or {}, read_runs(out_dir)))


if __name__ == "__main__":
    main(sys.argv)
