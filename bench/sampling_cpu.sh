#!/usr/bin/env bash
# Sampling behind the runner, on CPU: (1) per-step sampling time at batch 1, 8, 32 with a 49k and
# a 128k vocabulary, greedy and temperature 0.8 + top-p 0.95, the old serial path beside the
# runner's BatchSampler (engine/examples/sampling_bench.rs, both in one process); (2) end-to-end
# output tok/s of pagoda-bench at concurrency 8 on the default model (128 in / 128 out,
# ignore_eos), alternating a server built before the change (BEFORE_SERVER=path, required for
# part 2) and the current one, RUNS times each.
#
#   BEFORE_SERVER=/path/to/old/pagoda-server bench/sampling_cpu.sh [RUNS=2] [NUM_PROMPTS=32]
#
# Appends one JSON line per measurement to bench/results/sampling_cpu-<date>.jsonl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
RUNS=${RUNS:-2}
NUM_PROMPTS=${NUM_PROMPTS:-32}
TARGET=${CARGO_TARGET_DIR:-target}
RESULTS="bench/results/sampling_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
cargo build --release --locked -q -p pagoda-server -p pagoda-bench
cargo build --release --locked -q -p pagoda-engine --example sampling_bench
MODEL=$(scripts/fetch-default-model.sh)
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus"
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)

echo "== per-step sampling time ($CPU)"
"$TARGET/release/examples/sampling_bench" | tee /dev/stderr | grep '^{' \
  | tag_rows date="$DATE" cpu="$CPU" >>"$RESULTS" 2>/dev/null

if [ -z "${BEFORE_SERVER:-}" ]; then
  echo "BEFORE_SERVER not set: skipping the end-to-end comparison" >&2
  exit 0
fi
serve_and_measure() {
  local label=$1 server=$2 port log out
  port=$(free_port)
  log=$(mktemp)
  "$server" --model "$MODEL" --host 127.0.0.1 --port "$port" --disable-log-requests >"$log" 2>&1 &
  local pid=$!
  wait_healthy "http://127.0.0.1:$port/health" "$pid" "$log"
  out=$(mktemp -d)
  "$TARGET/release/pagoda-bench" serve --base-url "http://127.0.0.1:$port" --endpoint /v1/completions \
    --tokenizer "$MODEL" --dataset-name random --random-input-len 128 --random-output-len 128 \
    --ignore-eos --num-prompts "$NUM_PROMPTS" --max-concurrency 8 --seed 0 --disable-progress \
    --save-result --result-dir "$out" --result-filename r.json >/dev/null
  stop_pid "$pid"
  result_row "$out/r.json" sampling_e2e server="$label" concurrency=8 \
    num_prompts="$NUM_PROMPTS" date="$DATE" cpu="$CPU" | tee -a "$RESULTS"
  rm -rf "$out" "$log"
}
echo "== end to end, concurrency 8, alternating before/after"
for _ in $(seq "$RUNS"); do
  serve_and_measure before "$BEFORE_SERVER"
  serve_and_measure after "$TARGET/release/pagoda-server"
done
