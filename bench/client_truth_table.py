#!/usr/bin/env python3
"""The markdown table of bench/client_truth.sh: one row per client run, from OUT_DIR/runs.tsv,
OUT_DIR/results/<run>.json (the client's own result) and OUT_DIR/alignments/<run>.json
(`pagoda-bench align -o`). Times in ms; each metric cell is `client / server (difference)`.

    python3 bench/client_truth_table.py OUT_DIR
"""
import json
import os
import sys

CLIENT_NAMES = {"vllm": "vllm bench serve", "pagoda": "pagoda-bench"}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ms(value_s):
    return "-" if value_s is None else f"{value_s * 1e3:.2f}"


def metric_cell(alignment, name, quantile):
    metric = next((m for m in alignment["metrics"] if m["name"] == name), None)
    if metric is None:
        return "-"
    client, server = metric["client"][f"{quantile}_s"], metric["server"][f"{quantile}_s"]
    diff = metric[f"{quantile}_difference_pct"]
    diff_text = "-" if diff is None else f"{diff:+.1f}%"
    return f"{ms(client)} / {ms(server)} ({diff_text})"


def requests_cell(result, alignment):
    completed = result.get("completed") if result else None
    failed = result.get("failed") if result else None
    if failed is None and result and isinstance(result.get("errors"), list):
        failed = sum(1 for e in result["errors"] if e)
    matched = alignment["num_matched"] if alignment else "-"
    return f"{completed if completed is not None else '-'} / {failed if failed is not None else '-'} / {matched}"


def row(out_dir, order, client, name):
    result = load(os.path.join(out_dir, "results", f"{name}.json"))
    alignment = load(os.path.join(out_dir, "alignments", f"{name}.json"))
    cells = [order, CLIENT_NAMES.get(client, client), requests_cell(result, alignment)]
    if alignment is None:
        reason = "no result" if result is None else "align failed"
        return cells + [f"({reason}: see logs/{name}*)"] + [""] * 9
    for name_ in ("ttft", "tpot", "itl"):
        cells += [metric_cell(alignment, name_, "p50"), metric_cell(alignment, name_, "p99")]
    gap = alignment["client_dispatch_gap"]
    cells += [
        ms(alignment["request_transit"]["p99_s"]),
        ms(alignment["first_token_delivery"]["p99_s"]),
        f"{ms(gap['p50_s'])} / {ms(gap['p99_s'])}",
        f"±{(alignment['offset']['upper_bound_s'] - alignment['offset']['lower_bound_s']) / 2 * 1e3:.3f}",
    ]
    return cells


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: client_truth_table.py OUT_DIR")
    out_dir = sys.argv[1]
    meta = load(os.path.join(out_dir, "meta.json")) or {}
    header = [
        "#", "client", "ok / failed / matched",
        "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p50", "ITL p99",
        "transit p99", "delivery p99", "dispatch gap p50 / p99", "offset",
    ]
    print(f"# Client vs server truth ({meta.get('date', '?')}, commit {meta.get('commit', '?')})\n")
    engine = "pagoda-server --mock --mock-ttft-ms 50 --mock-tpot-ms 10" if meta.get("mock") else meta.get("model", "?")
    print(
        f"Server: {engine}, prefix caching off{', ' + meta['server_args'] if meta.get('server_args') else ''}; "
        f"chat, random {meta.get('input_len')} in / {meta.get('output_len')} out (ignore_eos), "
        f"{meta.get('num_prompts')} prompts, {meta.get('max_concurrency')} concurrent, seed {meta.get('seed')}"
        f"{' (after an untabulated warm-up run)' if meta.get('warmup') else ''}; "
        f"{meta.get('cpus')} CPUs ({meta.get('cpu', '?')}).\n"
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    with open(os.path.join(out_dir, "runs.tsv")) as f:
        for line in f:
            order, client, name = line.rstrip("\n").split("\t")
            print("| " + " | ".join(str(c) for c in row(out_dir, order, client, name)) + " |")
    print(
        "\nms. Metric cells: client / server (client − server, % of server); the server's side runs "
        "from the request's arrival to its chunk writes. transit = server received − client sent; "
        "delivery = client read − server wrote (first token); dispatch gap = a request's send − the "
        "latest end before it; offset = the clock offset's uncertainty. ok / failed are the client's "
        "own counts; matched = requests found in the server's timeline."
    )


if __name__ == "__main__":
    main()
