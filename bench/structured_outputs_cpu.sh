#!/usr/bin/env bash
# Structured outputs on CPU, default model: (1) grammar compile time p50/p99 for the schemas of
# the test set (server/structured/examples/compile_times.rs, cache off); (2) pagoda-bench on the
# chat endpoint at concurrency 8 (128 prompt / 128 output tokens, ignore_eos: a constrained
# request still ends when its JSON is complete), alternating runs without and with the 10-field
# schema bench/workloads/json-schema-10-fields.json on one server, RUNS times each: output tok/s,
# mean/median TTFT and TPOT side by side.
#
#   bench/structured_outputs_cpu.sh [RUNS=3] [NUM_PROMPTS=48]
#
# Appends one JSON line per measurement to bench/results/structured_outputs_cpu-<date>.jsonl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
RUNS=${RUNS:-3}
NUM_PROMPTS=${NUM_PROMPTS:-48}
TARGET=${CARGO_TARGET_DIR:-target}
RESULTS="bench/results/structured_outputs_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
cargo build --release --locked -q -p pagoda-server -p pagoda-bench
cargo build --release --locked -q -p pagoda-structured --example compile_times
MODEL=$(scripts/fetch-default-model.sh)
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus"
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "== grammar compile time ($CPU)"
"$TARGET/release/examples/compile_times" 20 | grep '^{' | tag_rows bench=grammar_compile date="$DATE" cpu="$CPU" | tee -a "$RESULTS"

PORT=$(free_port)
LOG=$(mktemp)
"$TARGET/release/pagoda-server" --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --disable-log-requests >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
wait_healthy "http://127.0.0.1:$PORT/health" "$SERVER" "$LOG"

measure() {
  local label=$1; shift
  local out; out=$(mktemp -d)
  "$TARGET/release/pagoda-bench" serve --base-url "http://127.0.0.1:$PORT" \
    --backend openai-chat --tokenizer "$MODEL" --dataset-name random --random-input-len 128 \
    --random-output-len 128 --ignore-eos --num-prompts "$NUM_PROMPTS" --max-concurrency 8 \
    --seed 0 --disable-progress --save-result --result-dir "$out" --result-filename r.json \
    "$@" >/dev/null
  result_row "$out/r.json" structured_e2e mode="$label" concurrency=8 \
    num_prompts="$NUM_PROMPTS" date="$DATE" cpu="$CPU" | tee -a "$RESULTS"
}

echo "== warm-up"
measure warmup >/dev/null
for run in $(seq "$RUNS"); do
  echo "== run $run of $RUNS"
  measure unconstrained
  measure json_schema_10_fields --json-schema bench/workloads/json-schema-10-fields.json
done
python3 - "$RESULTS" "$DATE" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("date") == sys.argv[2] and r["bench"] == "structured_e2e"]
by = lambda mode: [r for r in rows if r["mode"] == mode]
free, schema = by("unconstrained"), by("json_schema_10_fields")
tput = lambda rs: statistics.median(r["output_throughput"] for r in rs)
ttft = lambda rs: statistics.median(r["median_ttft_ms"] for r in rs)
print(f"output tok/s: unconstrained {tput(free):.1f}, schema {tput(schema):.1f}, ratio {tput(schema) / tput(free):.3f}")
print(f"median TTFT ms: unconstrained {ttft(free):.1f}, schema {ttft(schema):.1f}")
PY
