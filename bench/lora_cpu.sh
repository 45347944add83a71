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
. bench/common.sh
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

PORT_OFF=$(free_port)
"$TARGET/release/pagoda-server" --model "$MODEL" --host 127.0.0.1 --port "$PORT_OFF" \
  --served-model-name base --disable-log-requests --no-enable-prefix-caching >"$ADAPTERS/off.log" 2>&1 &
SERVER_OFF=$!
PORT_ON=$(free_port)
"$TARGET/release/pagoda-server" --model "$MODEL" --host 127.0.0.1 --port "$PORT_ON" \
  --served-model-name base --disable-log-requests --no-enable-prefix-caching --enable-lora --max-loras 4 \
  --max-lora-rank 16 --lora-modules "${MODULES[@]}" >"$ADAPTERS/on.log" 2>&1 &
SERVER_ON=$!
trap 'kill $SERVER_OFF $SERVER_ON 2>/dev/null || true; rm -rf "$ADAPTERS"' EXIT
wait_healthy "http://127.0.0.1:$PORT_OFF/health" "$SERVER_OFF" "$ADAPTERS/off.log"
wait_healthy "http://127.0.0.1:$PORT_ON/health" "$SERVER_ON" "$ADAPTERS/on.log"

measure() {
  local label=$1 port=$2; shift 2
  local out; out=$(mktemp -d)
  "$TARGET/release/pagoda-bench" serve --base-url "http://127.0.0.1:$port" --model base \
    --backend openai-chat --tokenizer "$MODEL" --dataset-name random --random-input-len 128 \
    --random-output-len 128 --ignore-eos --num-prompts "$NUM_PROMPTS" --max-concurrency 8 \
    --seed 0 --disable-progress --save-result --result-dir "$out" --result-filename r.json \
    "$@" >/dev/null
  result_row "$out/r.json" lora_e2e mode="$label" concurrency=8 num_prompts="$NUM_PROMPTS" \
    date="$DATE" cpu="$CPU" >"$out/row.json"
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
