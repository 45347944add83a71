#!/usr/bin/env bash
# What publishing KV-cache events costs the engine, on the default model (CPU): output tokens/s
# of one pagoda-bench run with events off, on with a subscriber that reads them, and on with a
# subscriber that never reads; the three in turn, --rounds times, in one run. Writes the runs'
# results and a summary (the ratios to "off") under bench/results/kv_events_cpu/DATE/.
#
#   bench/kv_events_cpu.sh [--rounds 2] [--num-prompts 24] [--bin-dir target/release] [--no-build]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
ROUNDS=2 NUM_PROMPTS=24 BIN_DIR=target/release BUILD=1
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --num-prompts) NUM_PROMPTS=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
MODEL=$(scripts/fetch-default-model.sh)
[ "$BUILD" = 1 ] && cargo build --release -q -p pagoda-server -p pagoda-bench
OUT="bench/results/kv_events_cpu/$(date -u +%Y-%m-%d)"
mkdir -p "$OUT"
python3 -c 'import zmq' || { echo "needs pyzmq: python3 -m pip install pyzmq" >&2; exit 1; }

run_one() {
  local mode=$1 round=$2 port zmq_port server_pid sub_pid=""
  port=$(free_port) zmq_port=$(free_port)
  local args=(--model "$MODEL" --served-model-name smollm2 --host 127.0.0.1 --port "$port")
  if [ "$mode" != off ]; then
    args+=(--kv-events-config "{\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:$zmq_port\"}")
  fi
  "$BIN_DIR/pagoda-server" "${args[@]}" >"$OUT/server-$mode-$round.log" 2>&1 &
  server_pid=$!
  wait_healthy "http://127.0.0.1:$port/health" "$server_pid" "$OUT/server-$mode-$round.log"
  if [ "$mode" != off ]; then
    python3 bench/kv_events_subscriber.py "$mode" "tcp://127.0.0.1:$zmq_port" >"$OUT/subscriber-$mode-$round.json" &
    sub_pid=$!
    sleep 1
  fi
  "$BIN_DIR/pagoda-bench" serve --base-url "http://127.0.0.1:$port" --model smollm2 \
    --tokenizer "$MODEL" --dataset-name random --random-input-len 512 --random-output-len 64 \
    --num-prompts "$NUM_PROMPTS" --max-concurrency 4 --ignore-eos --seed "$round" \
    --save-result --result-filename "$OUT/bench-$mode-$round.json" >"$OUT/bench-$mode-$round.log" 2>&1
  curl -s "http://127.0.0.1:$port/metrics" | grep '^pagoda:kv_event_batches' >"$OUT/metrics-$mode-$round.txt" || true
  [ -n "$sub_pid" ] && { kill -TERM "$sub_pid"; wait "$sub_pid" || true; }
  stop_pid "$server_pid"
}

for ((round = 1; round <= ROUNDS; round++)); do
  for mode in off read stuck; do
    echo "round $round: events $mode"
    run_one "$mode" "$round"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
tps = {m: [json.load(open(f"{out}/bench-{m}-{r}.json"))["output_throughput"] for r in range(1, rounds + 1)]
       for m in ("off", "read", "stuck")}
off = statistics.median(tps["off"])
print("| events | output tok/s per round | median | ratio to off |\n|---|---|---|---|")
for mode, values in tps.items():
    med = statistics.median(values)
    print(f"| {mode} | {', '.join(f'{v:.1f}' for v in values)} | {med:.1f} | {med / off:.3f} |")
PY
