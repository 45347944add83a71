#!/usr/bin/env python3
"""Helpers of bench/soak.sh (python3 standard library only).

  soak_summary.py health URL --pid PID [--timeout-s 600]
      Waits until GET URL answers 200; fails early when process PID exits.
  soak_summary.py sample --pid PID --interval-s S --csv PATH [--metrics-url URL]
      Every S seconds (on a fixed grid from its start, t_s = 0 first) appends one CSV row:
      t_s,rss_kb,hwm_kb,rss_anon_kb,running,waiting,kv_cache_usage_perc
      from /proc/PID/status (VmRSS, VmHWM, RssAnon, in kB) and, when --metrics-url is given,
      the server's <namespace>:num_requests_running / num_requests_waiting /
      kv_cache_usage_perc gauges (empty when the scrape fails). On SIGTERM or SIGINT it takes one
      last sample and exits; it exits by itself when PID is gone.
  soak_summary.py summary --csv PATH --result PATH [--meta KEY=VALUE ...] [--append PATH]
      Prints the soak's one-line JSON summary (and appends it to PATH with --append). Exit
      status 1 when the goal is missed: RSS at the end at most 5% above RSS at 2 minutes (the
      sample nearest t = 120 s; a drop does not fail) and zero failed requests.
"""

import argparse
import json
import math
import os
import signal
import sys
import time
import urllib.error
import urllib.request

COLUMNS = ["t_s", "rss_kb", "hwm_kb", "rss_anon_kb", "running", "waiting", "kv_cache_usage_perc"]
REFERENCE_T_S = 120.0
TOLERANCE = 0.05


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) has no memory left to sample.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmd_health(args):
    deadline = time.monotonic() + args.timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(args.pid):
            print(f"server (pid {args.pid}) exited during startup", file=sys.stderr)
            return 1
        try:
            with urllib.request.urlopen(args.url, timeout=2) as r:
                if r.status == 200:
                    return 0
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    print(f"{args.url} not healthy after {args.timeout_s} s", file=sys.stderr)
    return 1


def proc_status(pid):
    """VmRSS, VmHWM, RssAnon in kB, or None when the process is gone."""
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon"):
                    values[key] = int(rest.split()[0])
    except (OSError, ValueError):
        return None
    if "VmRSS" not in values:
        return None
    return values


def scrape_gauges(url):
    """The engine gauges from a Prometheus text page, whatever the namespace."""
    out = {"running": "", "waiting": "", "kv_cache_usage_perc": ""}
    if not url:
        return out
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return out
    wanted = {
        "num_requests_running": "running",
        "num_requests_waiting": "waiting",
        "kv_cache_usage_perc": "kv_cache_usage_perc",
    }
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        base = name.rsplit(":", 1)[-1]
        column = wanted.get(base)
        if column and out[column] == "":
            out[column] = line.rsplit(" ", 1)[-1]
    return out


class Stop(Exception):
    pass


def cmd_sample(args):
    def stop(_signum, _frame):
        raise Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    new_file = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
    with open(args.csv, "a", buffering=1) as csv:
        if new_file:
            csv.write(",".join(COLUMNS) + "\n")
        start = time.monotonic()

        def sample():
            t = time.monotonic() - start
            status = proc_status(args.pid)
            if status is None:
                return False
            gauges = scrape_gauges(args.metrics_url)
            row = [
                f"{t:.1f}",
                str(status["VmRSS"]),
                str(status.get("VmHWM", "")),
                str(status.get("RssAnon", "")),
                gauges["running"],
                gauges["waiting"],
                gauges["kv_cache_usage_perc"],
            ]
            csv.write(",".join(row) + "\n")
            return True

        k = 0
        try:
            while True:
                if not pid_alive(args.pid) or not sample():
                    print(f"sampler: server (pid {args.pid}) is gone", file=sys.stderr)
                    return 0
                k += 1
                delay = start + k * args.interval_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        except Stop:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if pid_alive(args.pid):
                sample()
    return 0


def read_samples(path):
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        for line in f:
            cells = line.strip().split(",")
            if len(cells) != len(header):
                continue
            row = dict(zip(header, cells))
            rows.append(row)
    return rows


def num(value, kind=float):
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def cmd_summary(args):
    meta = {}
    for pair in args.meta:
        key, _, value = pair.partition("=")
        meta[key] = value
    reasons = []

    try:
        with open(args.result) as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        result = None
        reasons.append(f"no pagoda-bench result ({e})")
    ok = failed = None
    bench = {}
    if result is not None:
        ok, failed = result.get("completed"), result.get("failed")
        summary = result.get("pagoda", {}).get("summary", {})
        integrity = summary.get("integrity", {})
        bench = {
            "requests_sent": summary.get("num_requests"),
            "errors_by_kind": {e.get("label"): e.get("count") for e in summary.get("errors_by_kind", [])},
            "bench_duration_s": result.get("duration"),
            "scheduled_rate": integrity.get("scheduled_rate"),
            "achieved_rate": integrity.get("achieved_rate"),
            "client_fell_behind": integrity.get("fell_behind"),
            "client_fell_behind_reasons": integrity.get("reasons"),
            "request_throughput": result.get("request_throughput"),
            "output_throughput": result.get("output_throughput"),
            "total_input_tokens": result.get("total_input_tokens"),
            "total_output_tokens": result.get("total_output_tokens"),
            "max_concurrent_requests": result.get("max_concurrent_requests"),
            "median_ttft_ms": result.get("median_ttft_ms"),
            "p99_ttft_ms": result.get("p99_ttft_ms"),
            "median_tpot_ms": result.get("median_tpot_ms"),
            "p99_tpot_ms": result.get("p99_tpot_ms"),
            "median_e2el_ms": result.get("median_e2el_ms"),
            "p99_e2el_ms": result.get("p99_e2el_ms"),
        }
        if failed != 0:
            reasons.append(f"{failed} failed requests")
        if not ok:
            reasons.append("no successful requests")

    samples = [r for r in read_samples(args.csv) if num(r.get("rss_kb"), int) is not None]
    rss = {}
    if len(samples) < 2:
        reasons.append(f"only {len(samples)} RSS samples")
    else:
        ts = [num(r["t_s"]) for r in samples]
        kb = [num(r["rss_kb"], int) for r in samples]
        ref = min(range(len(samples)), key=lambda i: abs(ts[i] - REFERENCE_T_S))
        rss_ref, rss_end = kb[ref], kb[-1]
        ratio = rss_end / rss_ref
        running = [num(r.get("running")) for r in samples]
        waiting = [num(r.get("waiting")) for r in samples]
        kv = [num(r.get("kv_cache_usage_perc")) for r in samples]

        def peak(values):
            values = [v for v in values if v is not None]
            if not values:
                return None
            top = max(values)
            return int(top) if top.is_integer() else top

        rss = {
            "samples": len(samples),
            "rss_start_kb": kb[0],
            "rss_2min_t_s": ts[ref],
            "rss_2min_kb": rss_ref,
            "rss_end_t_s": ts[-1],
            "rss_end_kb": rss_end,
            "rss_end_over_2min": round(ratio, 4),
            "rss_max_kb": max(kb),
            "hwm_end_kb": num(samples[-1].get("hwm_kb"), int),
            "rss_anon_2min_kb": num(samples[ref].get("rss_anon_kb"), int),
            "rss_anon_end_kb": num(samples[-1].get("rss_anon_kb"), int),
            "peak_running": peak(running),
            "peak_waiting": peak(waiting),
            "peak_kv_cache_usage_perc": peak(kv),
        }
        if ratio > 1.0 + TOLERANCE:
            reasons.append(
                f"RSS at the end {rss_end} kB is {100 * (ratio - 1):+.1f}% from {rss_ref} kB "
                f"at t={ts[ref]:.0f} s (limit +{100 * TOLERANCE:.0f}%)"
            )
    if meta.get("warmup_failed", "0") != "0":
        reasons.append(f"{meta['warmup_failed']} failed warm-up requests")
    if meta.get("bench_exit_status", "0") != "0":
        reasons.append(f"pagoda-bench exited with status {meta['bench_exit_status']}")
    if meta.get("server_alive_at_end") == "no":
        reasons.append("the server exited before the end")

    line = {k: v for k, v in meta.items()}
    for key in ("cpus", "rate", "duration_s", "sample_s", "input_len", "output_len", "seed", "bench_exit_status",
                "warmup_requests", "warmup_failed", "rss_before_warmup_kb"):
        if key in line:
            value = num(line[key])
            if value is not None:
                line[key] = int(value) if value.is_integer() and key != "rate" else value
    line.update({"requests_ok": ok, "requests_failed": failed})
    line.update(bench)
    line.update(rss)
    line["goal"] = (
        f"RSS at the end at most {100 * TOLERANCE:.0f}% above RSS at t~{REFERENCE_T_S:.0f} s, "
        "and zero failed requests"
    )
    line["result"] = "PASS" if not reasons else "FAIL"
    line["fail_reasons"] = reasons
    text = json.dumps(line)
    print(text)
    if args.append:
        with open(args.append, "a") as f:
            f.write(text + "\n")
    return 0 if not reasons else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("health")
    h.add_argument("url")
    h.add_argument("--pid", type=int, required=True)
    h.add_argument("--timeout-s", type=float, default=600.0)
    s = sub.add_parser("sample")
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--interval-s", type=float, required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--metrics-url")
    m = sub.add_parser("summary")
    m.add_argument("--csv", required=True)
    m.add_argument("--result", required=True)
    m.add_argument("--meta", nargs="*", default=[], metavar="KEY=VALUE")
    m.add_argument("--append", metavar="PATH")
    args = p.parse_args()
    if args.cmd == "sample" and not (args.interval_s > 0 and math.isfinite(args.interval_s)):
        p.error("--interval-s must be a positive number")
    return {"health": cmd_health, "sample": cmd_sample, "summary": cmd_summary}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
