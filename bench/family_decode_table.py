#!/usr/bin/env python3
"""The table of bench/family_decode_cpu.sh: reads OUT/runs.jsonl and OUT/meta.json, prints markdown.

Per family and concurrency level: the median over rounds of mean TPOT and output tok/s, and the
median over rounds of the ratio to the same round's Llama run (family / llama for tok/s, llama /
family for TPOT, so that > 1 is faster in both), marked against the issue's target of being within
10% of Llama (a decode speed ratio of at least 0.90).

    python3 bench/family_decode_table.py bench/results/family_decode_cpu/<date> [--max-other-cpus 0.2]

Runs during which other processes kept more than --max-other-cpus CPUs busy (in the 5 s before
the run or during it, as the script records) are left out, and so is the ratio of a round whose
family run or Llama run was left out; the table says how many.
"""

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BASELINE = "llama"
TARGET = 0.90


def main() -> None:
    out = Path(sys.argv[1])
    max_other = float(sys.argv[sys.argv.index("--max-other-cpus") + 1]) if "--max-other-cpus" in sys.argv else 0.2
    meta = json.loads((out / "meta.json").read_text())
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    by = defaultdict(dict)  # (family, concurrency) -> round -> run
    loads = []
    families = []
    left_out = []
    for r in runs:
        c = r["run"]["concurrency"]
        other = max(r.get("other_cpus_before") or 0, r.get("other_cpus_during") or 0)
        if other > max_other:
            left_out.append(f"{r['family']} r{r['round']} c={c} ({other:.2f})")
            continue
        by[(r["family"], c)][r["round"]] = r["run"]
        loads.append((r["load_start"], r["load_end"], r.get("other_cpus_before"), r.get("other_cpus_during")))
        if r["family"] not in families:
            families.append(r["family"])
    order = [f for f in meta.get("families", "").split() if f in families] or families
    levels = sorted({c for (_, c) in by})
    print(f"Command: `{meta.get('command')}` ({meta.get('date')}, commit {meta.get('commit')}, "
          f"{meta.get('cpu')}, {meta.get('cpus')} CPUs; shape {meta.get('shape')}; "
          f"--weight-format {meta.get('weight_format')}, {meta.get('requests')} requests per "
          f"sequence per level, {meta.get('rounds')} rounds)")
    if loads:
        starts = [a for a, *_ in loads]
        print(f"\n1-minute load average at the runs' starts: {min(starts):.2f}-{max(starts):.2f} "
              f"(median {statistics.median(starts):.2f}); at their ends "
              f"{min(x[1] for x in loads):.2f}-{max(x[1] for x in loads):.2f}")
        for i, what in ((2, "in the 5 s before each run"), (3, "during each run")):
            vals = [x[i] for x in loads if x[i] is not None]
            if vals:
                print(f"CPUs kept busy by other processes {what}: {min(vals):.2f}-{max(vals):.2f} "
                      f"(median {statistics.median(vals):.2f}, of {meta.get('cpus')})")
    if left_out:
        print(f"\nLeft out (other processes above {max_other} CPUs): {len(left_out)} of {len(runs)} runs: "
              + ", ".join(left_out))
    header = "| family |"
    rule = "|---|"
    for c in levels:
        header += f" c={c} TPOT ms | c={c} tok/s | c={c} vs Llama (TPOT / tok/s) |"
        rule += "---|---|---|"
    print()
    print(header + " within 10%? |")
    print(rule + "---|")
    for fam in order:
        row = f"| {fam} |"
        ok = True
        for c in levels:
            mine = by.get((fam, c), {})
            base = by.get((BASELINE, c), {})
            if not mine:
                row += " – | – | – |"
                continue
            tpot = statistics.median(r["mean_tpot_ms"] for r in mine.values())
            tps = statistics.median(r["output_tokens_per_s"] for r in mine.values())
            rounds = sorted(set(mine) & set(base))
            n_rounds = len(rounds)
            if rounds:
                r_tpot = statistics.median(base[k]["mean_tpot_ms"] / mine[k]["mean_tpot_ms"] for k in rounds)
                r_tps = statistics.median(mine[k]["output_tokens_per_s"] / base[k]["output_tokens_per_s"] for k in rounds)
                ok = ok and r_tpot >= TARGET and r_tps >= TARGET
                ratio = f"{r_tpot:.3f} / {r_tps:.3f} ({n_rounds})"
            else:
                ratio = "–"
            row += f" {tpot:.2f} | {tps:.1f} | {ratio} |"
        row += (" baseline |" if fam == BASELINE else (" yes |" if ok else " **no** |"))
        print(row)
    print(f"\nRatios: median over rounds of the family's speed over the same round's {BASELINE} "
          f"(TPOT: {BASELINE}'s / the family's; tok/s: the family's / {BASELINE}'s; in brackets the "
          f"number of rounds); > 1 is faster. "
          f"Target: >= {TARGET:.2f}. TPOT is offline_bench's mean time per output token after the "
          f"first; c=8 tok/s includes the 8 prompts' prefill.")
    spread = []
    for fam in order:
        for c in levels:
            vals = [r["mean_tpot_ms"] for r in by.get((fam, c), {}).values()]
            if len(vals) > 1:
                spread.append((fam, c, min(vals), max(vals)))
    if spread:
        print("\nTPOT range over rounds (min-max ms): " + "; ".join(
            f"{f} c={c} {lo:.2f}-{hi:.2f}" for f, c, lo, hi in spread))


if __name__ == "__main__":
    main()
