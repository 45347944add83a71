#!/usr/bin/env bash
# LoRA adapters on CPU, default model, pagoda-bench on the chat endpoint at concurrency 8
# (128 prompt / 128 output tokens, ignore_eos), RUNS alternating rounds of three measurements:
#   base_lora_off   base-model traffic, server without --enable-lora
#   base_lora_on    base-model traffic, server with --enable-lora and 4 adapters loaded
#   adapters_4      the same server, each request to one of 4 adapters (rank 16, all seven
#                   projections, made by scripts/make-lora-adapter.py), round-robin
# Both servers run the whole time (an idle one costs nothing); each measurement has the two
# cores to itself. Prefix caching is off on both: every round sends the same seeded prompts, and
# a cache that holds one workload's prompts but not another's (adapters and the base never share
# blocks) would measure the cache, not the adapters. Reports output tok/s and median TTFT/TPOT, and the ratios
# adapters_4 / base_lora_on and base_lora_on / base_lora_off (medians over the rounds).
#
#   bench/lora_cpu.sh [RUNS=3] [NUM_PROMPTS=48]
#
# Appends one JSON line per measurement to bench/results/lora_cpu-<date>.jsonl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUNS=${1:-${RUNS:-3}}
NUM_PROMPTS=${2:-${NUM_PROMPTS:-48}}
TARGET=${CARGO_TARGET_DIR:-target}
RESULTS="bench/results/lora_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
cargo build --release --locked -q -p pagoda-server -p pagoda-bench
MODEL=$(scripts/fetch-default-model.sh)
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus"
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ADAPTERS=$(mktemp -d)
MODULES=()
for i in 0 1 2 3; do
  python3 scripts/make-lora-adapter.py --base "$MODEL" --out "$ADAPTERS/a$i" --rank 16 \
    --alpha 32 --targets all --seed "$i" >/dev/null
  MODULES+=("a$i=$ADAPTERS/a$i")
done

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() {
  for _ in $(seq 600); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
      "http://127.0.0.1:$1/health" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "server on port $1 did not start" >&2
  return 1
}
PORT_OFF=$(free_port)
"$TARGET/release/pagoda-server" --model "$MODEL" --host 127.0.0.1 --port "$PORT_OFF" \
  --served-model-name base --disable-log-requests --no-enable-prefix-caching >/dev/null 2>&1 &
SERVER_OFF=$!
PORT_ON=$(free_port)
"$TARGET/release/pagoda-server" --model "$MODEL" --host 127.0.0.1 --port "$PORT_ON" \
  --served-model-name base --disable-log-requests --no-enable-prefix-caching --enable-lora --max-loras 4 \
  --max-lora-rank 16 --lora-modules "${MODULES[@]}" >/dev/null 2>&1 &
SERVER_ON=$!
trap 'kill $SERVER_OFF $SERVER_ON 2>/dev/null || true; rm -rf "$ADAPTERS"' EXIT
wait_healthy "$PORT_OFF"
wait_healthy "$PORT_ON"

measure() {
  local label=$1 port=$2; shift 2
  local out; out=$(mktemp -d)
  "$TARGET/release/pagoda-bench" serve --base-url "http://127.0.0.1:$port" --model base \
    --backend openai-chat --tokenizer "$MODEL" --dataset-name random --random-input-len 128 \
    --random-output-len 128 --ignore-eos --num-prompts "$NUM_PROMPTS" --max-concurrency 8 \
    --seed 0 --disable-progress --save-result --result-dir "$out" --result-filename r.json \
    "$@" >/dev/null
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
row = {"bench": "lora_e2e", "mode": sys.argv[2], "output_throughput": r["output_throughput"],
       "median_ttft_ms": r.get("median_ttft_ms"), "median_tpot_ms": r.get("median_tpot_ms"),
       "total_output_tokens": r.get("total_output_tokens"), "completed": r["completed"],
       "failed": r.get("failed"), "concurrency": 8, "num_prompts": int(sys.argv[3]),
       "date": sys.argv[4], "cpu": sys.argv[5]}
print(json.dumps(row))' "$out/r.json" "$label" "$NUM_PROMPTS" "$DATE" "$CPU" >"$out/row.json"
  if [ "$label" != warmup ]; then tee -a "$RESULTS" <"$out/row.json"; fi
  rm -rf "$out"
}

echo "== warm-up ($CPU)"
measure warmup "$PORT_OFF" >/dev/null
measure warmup "$PORT_ON" --lora-modules a0,a1,a2,a3 --lora-assignment round-robin >/dev/null
for run in $(seq "$RUNS"); do
  echo "== round $run of $RUNS"
  measure base_lora_off "$PORT_OFF"
  measure base_lora_on "$PORT_ON"
  measure adapters_4 "$PORT_ON" --lora-modules a0,a1,a2,a3 --lora-assignment round-robin
done
python3 - "$RESULTS" "$DATE" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("date") == sys.argv[2] and r["bench"] == "lora_e2e"]
med = lambda mode, key: statistics.median(r[key] for r in rows if r["mode"] == mode)
for mode in ("base_lora_off", "base_lora_on", "adapters_4"):
    print(f"{mode:14} output tok/s {med(mode, 'output_throughput'):6.1f}  "
          f"TTFT p50 {med(mode, 'median_ttft_ms'):7.1f} ms  TPOT p50 {med(mode, 'median_tpot_ms'):6.1f} ms")
tput = lambda mode: med(mode, "output_throughput")
print(f"adapters_4 / base_lora_on: {tput('adapters_4') / tput('base_lora_on'):.3f}")
print(f"base_lora_on / base_lora_off: {tput('base_lora_on') / tput('base_lora_off'):.3f}")
PY
