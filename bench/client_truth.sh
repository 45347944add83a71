#!/usr/bin/env bash
# Which client is right (#22)? `vllm bench serve` (A) and `pagoda-bench serve` (B) run the same
# scenario in turn, A/B/A/B/..., against ONE pagoda-server that writes its own per-request
# timeline (--request-timeline). Each run sends its own x-request-id prefix, so all runs share the
# timeline; `pagoda-bench align` then puts every run beside the server's truth. Scenario: chat
# endpoint, random prompts of INPUT_LEN tokens, OUTPUT_LEN output tokens (ignore_eos), closed
# loop of MAX_CONCURRENCY streams, NUM_PROMPTS requests, seed SEED, prefix caching off.
#
#   bench/client_truth.sh                      # default model on CPU, 3 pairs of 64 requests
#   MOCK=1 NUM_PROMPTS=16 NUM_PAIRS=1 bench/client_truth.sh     # quick check, no model compute
#
# Environment (defaults in brackets):
#   NUM_PAIRS [3]  NUM_PROMPTS [64]  INPUT_LEN [128]  OUTPUT_LEN [128]  MAX_CONCURRENCY [8]  SEED [0]
#   WARMUP [1]: 1 = one untabulated pagoda-bench run of MAX_CONCURRENCY requests first
#   MOCK [0]: 1 = pagoda-server --mock --mock-ttft-ms 50 --mock-tpot-ms 10 (model's tokenizer)
#   MODEL [scripts/fetch-default-model.sh]: the GGUF file served (and the clients' tokenizer)
#   SERVER_ARGS []: extra pagoda-server arguments (word-split), e.g. "--max-num-seqs 16"
#   PAGODA_SERVER, PAGODA_BENCH: binaries [a release build, built here when either is unset]
#   VLLM [/work/vllm-venv/bin/vllm, else vllm on PATH]: vLLM's CLI; its venv's python makes the
#     Hugging Face tokenizer directory vLLM needs (it cannot read a GGUF tokenizer) once, into
#     VLLM_TOKENIZER [~/.cache/pagoda/hf-tokenizer-<model file name>]
#   PORT [18653]  OUT_DIR [bench/results/client-truth/<UTC date>]
#
# Writes to OUT_DIR: summary.md (one row per run: client vs server p50/p99 of TTFT, TPOT and ITL
# with the difference, transit/delivery p99, dispatch gap p50/p99), meta.json, timeline.jsonl
# (the server's), results/<run>.json (each client's own result), alignments/<run>.json
# (`pagoda-bench align -o`), logs/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
NUM_PAIRS=${NUM_PAIRS:-3}
NUM_PROMPTS=${NUM_PROMPTS:-64}
INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-128}
MAX_CONCURRENCY=${MAX_CONCURRENCY:-8}
SEED=${SEED:-0}
WARMUP=${WARMUP:-1}
MOCK=${MOCK:-0}
PORT=${PORT:-18653}
SERVED_NAME=client-truth
OUT_DIR=${OUT_DIR:-bench/results/client-truth/$(date -u +%Y-%m-%d)}
MODEL=${MODEL:-$(scripts/fetch-default-model.sh)}
[ -s "$MODEL" ] || { echo "model file $MODEL not found" >&2; exit 2; }

if [ -z "${PAGODA_SERVER:-}" ] || [ -z "${PAGODA_BENCH:-}" ]; then
  cargo build --release -q -p pagoda-server -p pagoda-bench --bins
  BIN_DIR="${CARGO_TARGET_DIR:-target}/release"
  PAGODA_SERVER=${PAGODA_SERVER:-$BIN_DIR/pagoda-server}
  PAGODA_BENCH=${PAGODA_BENCH:-$BIN_DIR/pagoda-bench}
fi
"$PAGODA_SERVER" --help | grep -q -- --request-timeline ||
  { echo "$PAGODA_SERVER has no --request-timeline: rebuild it" >&2; exit 2; }
"$PAGODA_BENCH" align --help >/dev/null 2>&1 ||
  { echo "$PAGODA_BENCH has no align subcommand: rebuild it" >&2; exit 2; }

. bench/common.sh
find_vllm || { echo "vLLM's CLI not found: set VLLM=/path/to/vllm" >&2; exit 2; }
ensure_vllm_tokenizer "$MODEL"

mkdir -p "$OUT_DIR/results" "$OUT_DIR/alignments" "$OUT_DIR/logs"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
TIMELINE="$OUT_DIR/timeline.jsonl"
RUNS="$OUT_DIR/runs.tsv"
: >"$RUNS"
if [ "$MOCK" = 1 ]; then
  ENGINE_ARGS=(--mock --mock-ttft-ms 50 --mock-tpot-ms 10 --model "$MODEL")
else
  ENGINE_ARGS=(--model "$MODEL")
fi
# shellcheck disable=SC2206  # SERVER_ARGS is split into words on purpose
EXTRA_ARGS=(${SERVER_ARGS:-})
"$PAGODA_SERVER" "${ENGINE_ARGS[@]}" --served-model-name "$SERVED_NAME" --no-enable-prefix-caching \
  --request-timeline "$TIMELINE" --host 127.0.0.1 --port "$PORT" --disable-log-requests \
  "${EXTRA_ARGS[@]}" >"$OUT_DIR/logs/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
wait_healthy "http://127.0.0.1:$PORT/health" "$SERVER" "$OUT_DIR/logs/server.log"
BASE_URL="http://127.0.0.1:$PORT"

run_vllm() { # $1 run name (= the request-id prefix without its dash)
  HF_HUB_OFFLINE=1 "$VLLM" bench serve --base-url "$BASE_URL" --model "$SERVED_NAME" \
    --tokenizer "$VLLM_TOKENIZER" --backend openai-chat --endpoint /v1/chat/completions \
    --dataset-name random --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" \
    --ignore-eos --num-prompts "$NUM_PROMPTS" --max-concurrency "$MAX_CONCURRENCY" --seed "$SEED" \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 --disable-tqdm \
    --request-id-prefix "$1-" --save-result --save-detailed \
    --result-dir "$OUT_DIR/results" --result-filename "$1.json"
}

run_pagoda() { # $1 run name, [$2 number of prompts]
  "$PAGODA_BENCH" serve --base-url "$BASE_URL" --model "$SERVED_NAME" --tokenizer "$MODEL" \
    --backend openai-chat --endpoint /v1/chat/completions \
    --dataset-name random --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" \
    --ignore-eos --num-prompts "${2:-$NUM_PROMPTS}" --max-concurrency "$MAX_CONCURRENCY" --seed "$SEED" \
    --disable-progress --request-id-prefix "$1-" --save-result --save-detailed \
    --result-dir "$OUT_DIR/results" --result-filename "$1.json"
}

if [ "$WARMUP" = 1 ]; then # the server's first requests are not any client's to pay for
  echo "== warm-up: pagoda-bench, $MAX_CONCURRENCY requests (not tabulated)" >&2
  run_pagoda warmup "$MAX_CONCURRENCY" >"$OUT_DIR/logs/warmup.log" 2>&1 ||
    echo "   warm-up failed: see $OUT_DIR/logs/warmup.log" >&2
fi
order=0
for pair in $(seq "$NUM_PAIRS"); do
  for client in vllm pagoda; do
    order=$((order + 1))
    name="run$order-$client"
    echo "== run $order of $((2 * NUM_PAIRS)): $client (pair $pair)" >&2
    if ! "run_$client" "$name" >"$OUT_DIR/logs/$name.log" 2>&1; then
      echo "   $client failed (see $OUT_DIR/logs/$name.log); continuing" >&2
    fi
    printf '%s\t%s\t%s\n' "$order" "$client" "$name" >>"$RUNS"
  done
done
kill -TERM "$SERVER"; wait "$SERVER" || true
trap - EXIT

while IFS=$'\t' read -r _ _ name; do
  [ -s "$OUT_DIR/results/$name.json" ] || continue
  "$PAGODA_BENCH" align "$OUT_DIR/results/$name.json" --server-timeline "$TIMELINE" \
    --request-id-prefix "$name-" -o "$OUT_DIR/alignments/$name.json" \
    >"$OUT_DIR/logs/$name.align.txt" 2>&1 ||
    echo "   align $name failed: see $OUT_DIR/logs/$name.align.txt" >&2
done <"$RUNS"

cat >"$OUT_DIR/meta.json" <<EOF
{"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)", "cpus": $(nproc), "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)", "mock": $([ "$MOCK" = 1 ] && echo true || echo false), "model": "$MODEL", "server_args": "${SERVER_ARGS:-}", "num_pairs": $NUM_PAIRS, "num_prompts": $NUM_PROMPTS, "input_len": $INPUT_LEN, "output_len": $OUTPUT_LEN, "max_concurrency": $MAX_CONCURRENCY, "warmup": $([ "$WARMUP" = 1 ] && echo true || echo false), "seed": $SEED, "pagoda_server": "$PAGODA_SERVER", "pagoda_bench": "$PAGODA_BENCH", "vllm": "$VLLM", "vllm_tokenizer": "$VLLM_TOKENIZER"}
EOF
python3 bench/client_truth_table.py "$OUT_DIR" | tee "$OUT_DIR/summary.md"
