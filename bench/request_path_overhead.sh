#!/usr/bin/env bash
# Per-request server overhead of two pagoda-server builds, side by side: each serves the same
# open-loop load from pagoda-bench (Poisson arrivals at --rate req/s for --seconds, 16-token
# prompts, 16-token streamed outputs) with the mock engine (--mock-tpot-ms 10, so all the
# server's own time is the HTTP layer, the request path and SSE), in alternating rounds so that
# the machine's drift falls on both. Per run: the server's CPU time per request (utime + stime
# from /proc, in ms), TTFT and ITL percentiles, and the client's achieved rate.
#
#   bench/request_path_overhead.sh --before BIN --after BIN [--rate 800] [--seconds 10]
#                                  [--rounds 3] [--endpoint /v1/chat/completions] [--bench BIN]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
RATE=800
SECONDS_PER_RUN=10
ROUNDS=3
ENDPOINT=/v1/chat/completions
BENCH=target/release/pagoda-bench
BEFORE=""
AFTER=""
while [ $# -gt 0 ]; do
  case "$1" in
    --before) BEFORE=$2; shift 2 ;;
    --after) AFTER=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --endpoint) ENDPOINT=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
[ -x "$BEFORE" ] && [ -x "$AFTER" ] || { echo "--before and --after must name server binaries" >&2; exit 2; }
MODEL=$(scripts/fetch-default-model.sh)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PORT=$(free_port)
TICKS=$(getconf CLK_TCK)
run_one() {  # run_one LABEL BINARY ROUND
  local label=$1 binary=$2 round=$3
  "$binary" --mock --mock-tpot-ms 10 --port $PORT --host 127.0.0.1 --max-num-seqs 4096 \
    --max-waiting-requests 1000000 --kv-cache-memory 64GiB --disable-log-requests \
    >"$TMP/$label-$round.log" 2>&1 &
  local server=$!
  wait_healthy "http://127.0.0.1:$PORT/health" $server "$TMP/$label-$round.log" 60
  local cpu_before
  cpu_before=$(awk '{print $14 + $15}' /proc/$server/stat)
  "$BENCH" serve --base-url "http://127.0.0.1:$PORT" --model mock --tokenizer "$MODEL" \
    --endpoint "$ENDPOINT" --random-input-len 16 --random-output-len 16 \
    --num-prompts $((RATE * SECONDS_PER_RUN)) --request-rate "$RATE" --seed "$round" \
    --ignore-eos --disable-progress --save-result --result-dir "$TMP" \
    --result-filename "$label-$round.json" >/dev/null 2>&1
  local cpu_after
  cpu_after=$(awk '{print $14 + $15}' /proc/$server/stat)
  stop_pid $server
  python3 - "$TMP/$label-$round.json" "$label" "$round" "$cpu_before" "$cpu_after" "$TICKS" <<'PY'
import json, sys
path, label, round_, before, after, ticks = sys.argv[1:]
r = json.load(open(path))
completed = r["completed"]
cpu_ms = (float(after) - float(before)) * 1000.0 / float(ticks)
integrity = r.get("pagoda", {}).get("summary", {}).get("integrity", {})
print(json.dumps({"build": label, "round": int(round_), "completed": completed,
  "failed": r.get("failed"), "achieved_rate": integrity.get("achieved_rate"),
  "server_cpu_ms_per_request": cpu_ms / max(completed, 1),
  "p50_ttft_ms": r["median_ttft_ms"], "p99_ttft_ms": r["p99_ttft_ms"],
  "p50_itl_ms": r["median_itl_ms"], "p99_itl_ms": r["p99_itl_ms"]}))
PY
}
{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"commit\": \"$(git rev-parse --short HEAD)\", \"cpus\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"rate\": $RATE, \"seconds_per_run\": $SECONDS_PER_RUN, \"endpoint\": \"$ENDPOINT\", \"before\": \"$BEFORE\", \"after\": \"$AFTER\"}"
  for round in $(seq "$ROUNDS"); do
    run_one before "$BEFORE" "$round"
    run_one after "$AFTER" "$round"
  done
} | tee "$TMP/lines.jsonl"
python3 - "$TMP/lines.jsonl" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])][1:]
def median(build, key):
    return statistics.median(l[key] for l in lines if l["build"] == build)
print("| figure (median of rounds) | before | after | after / before |")
print("|---|---|---|---|")
for key in ["server_cpu_ms_per_request", "p50_ttft_ms", "p99_ttft_ms", "p50_itl_ms", "p99_itl_ms", "achieved_rate"]:
    b, a = median("before", key), median("after", key)
    print(f"| {key} | {b:.3f} | {a:.3f} | {a / b:.3f} |")
PY
