#!/usr/bin/env bash
# Serving-layer cost: pagoda-server --mock (no model compute) under closed-loop streaming load at
# 1, 64 and 512 concurrent streams, driven by pagoda-bench (--max-concurrency N, rate inf,
# --duration S: each stream sends its next request as soon as the last one ends). Two server
# settings:
#   zero model time (--mock-tpot-ms 0): the most streamed tokens/s and requests/s the HTTP layer,
#     scheduler and SSE sustain;
#   --mock-tpot-ms 20: the latency the server adds per token = measured ITL - 20 ms.
# --num-prompts is 5,000 per second of --duration: more than the closed loop sends. Client and
# server share this machine; the report says how many CPUs.
#
#   bench/serve_mock_cpu.sh [--duration-s 10] [--max-tokens 128] [--bin-dir target/release]
#                           [--no-build]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
DURATION=10
MAX_TOKENS=128
BIN_DIR=target/release
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --duration-s) DURATION=$2; shift 2 ;;
    --max-tokens) MAX_TOKENS=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
if [ "$BUILD" = 1 ]; then
  cargo build --release -q -p pagoda-server --bin pagoda-server -p pagoda-bench --bin pagoda-bench
fi
MODEL=$(scripts/fetch-default-model.sh)
OUT="bench/results/serve_mock_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PORT=$(free_port)
run_level() {  # run_level TPOT_MS CONCURRENCY
  local tpot=$1 concurrency=$2
  "$BIN_DIR/pagoda-server" --mock --mock-tpot-ms "$tpot" --port "$PORT" --host 127.0.0.1 \
    --disable-log-requests --max-num-seqs 512 --max-waiting-requests 4096 \
    --kv-cache-memory 16GiB >"$TMP/server.log" 2>&1 &
  local pid=$!
  wait_healthy "http://127.0.0.1:$PORT/health" $pid "$TMP/server.log" 60
  "$BIN_DIR/pagoda-bench" serve --base-url "http://127.0.0.1:$PORT" --model mock \
    --tokenizer "$MODEL" --endpoint /v1/completions --random-input-len 4 \
    --random-output-len "$MAX_TOKENS" --ignore-eos --max-concurrency "$concurrency" \
    --request-rate inf --duration "$DURATION" --num-prompts $((5000 * DURATION)) --disable-progress \
    --save-result --result-dir "$TMP" --result-filename run.json >/dev/null 2>&1
  stop_pid $pid
  python3 - "$TMP/run.json" "$tpot" "$concurrency" "$MAX_TOKENS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
tpot, concurrency, max_tokens = (int(v) for v in sys.argv[2:])
result = {"client": "pagoda-bench", "concurrency": concurrency, "max_tokens": max_tokens,
          "elapsed_s": r["duration"], "num_requests": r["completed"],
          "num_errors": r["failed"], "num_tokens": r["total_output_tokens"],
          "tokens_per_s": r["output_throughput"], "requests_per_s": r["request_throughput"]}
for name in ("ttft", "itl"):
    for key, vllm in (("mean", "mean"), ("p50", "median"), ("p99", "p99")):
        result[f"{key}_{name}_ms"] = r[f"{vllm}_{name}_ms"]
print(json.dumps({"mock_tpot_ms": tpot, "result": result}))
PY
}
{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\", \"cpus\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"duration_s\": $DURATION, \"max_tokens\": $MAX_TOKENS}"
  for tpot in 0 20; do
    for concurrency in 1 64 512; do
      run_level "$tpot" "$concurrency"
    done
  done
} | tee -a "$OUT"
