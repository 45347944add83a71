#!/usr/bin/env bash
# Serving-layer cost: pagoda-server --mock (no model compute) under closed-loop streaming load at
# 1, 64 and 512 concurrent streams. Two server settings:
#   zero model time (--mock-tpot-ms 0): the most streamed tokens/s and requests/s the HTTP layer,
#     scheduler and SSE sustain;
#   --mock-tpot-ms 20: the latency the server adds per token = measured ITL - 20 ms.
# Client (examples/sse_load.rs) and server share this machine; the report says how many CPUs.
#
#   bench/serve_mock_cpu.sh [--duration-s 10] [--max-tokens 128]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DURATION=10
MAX_TOKENS=128
while [ $# -gt 0 ]; do
  case "$1" in
    --duration-s) DURATION=$2; shift 2 ;;
    --max-tokens) MAX_TOKENS=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
cargo build --release -q -p pagoda-server --bin pagoda-server --example sse_load
OUT="bench/results/serve_mock_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
PORT=18231
run_level() {
  local tpot=$1 concurrency=$2
  ./target/release/pagoda-server --mock --mock-tpot-ms "$tpot" --port "$PORT" --host 127.0.0.1 \
    --disable-log-requests --max-num-seqs 512 --max-waiting-requests 4096 --kv-cache-memory 16GiB 2>/dev/null &
  local pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
  local result
  result=$(./target/release/examples/sse_load --url "http://127.0.0.1:$PORT" \
    --concurrency "$concurrency" --duration-s "$DURATION" --max-tokens "$MAX_TOKENS")
  kill -TERM "$pid"; wait "$pid" || true
  echo "{\"mock_tpot_ms\": $tpot, \"result\": $result}"
}
{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\", \"cpus\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"duration_s\": $DURATION, \"max_tokens\": $MAX_TOKENS}"
  for tpot in 0 20; do
    for concurrency in 1 64 512; do
      run_level "$tpot" "$concurrency"
    done
  done
} | tee -a "$OUT"
