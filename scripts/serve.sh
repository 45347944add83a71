#!/usr/bin/env bash
# The README's first command: build pagoda-server and pagoda-bench (release), fetch the default
# model on first use, serve it on port ${PAGODA_PORT:-8000}, show one chat completion through the
# OpenAI endpoint and a short benchmark report against it (16 requests, 4 at a time, 128-token
# prompts, 32 generated tokens), then keep serving until Ctrl-C (SIGINT drains in-flight requests
# and exits 0). PAGODA_SKIP_BENCH=1 skips the benchmark.
#
#   scripts/serve.sh [pagoda-server flags...]      e.g. scripts/serve.sh --api-key secret
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PORT=${PAGODA_PORT:-8000}
cargo build --release -q -p pagoda-server -p pagoda-bench --bins
./target/release/pagoda-server --port "$PORT" "$@" &
SERVER=$!
trap 'kill -INT $SERVER 2>/dev/null || true; wait $SERVER' INT TERM
for _ in $(seq 1200); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { echo "pagoda-server exited during startup" >&2; exit 1; }
  sleep 0.25
done
AUTH=()
if [ -n "${PAGODA_API_KEY:-}" ]; then AUTH=(-H "Authorization: Bearer $PAGODA_API_KEY"); fi
echo "--- POST /v1/chat/completions: What is the capital of France?" >&2
curl -sS "http://127.0.0.1:$PORT/v1/chat/completions" "${AUTH[@]}" \
  -H 'content-type: application/json' \
  -d '{"messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":32,"temperature":0}' \
  | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["choices"][0]["message"]["content"]); print("usage:", r["usage"])'
if [ -z "${PAGODA_SKIP_BENCH:-}" ]; then
  echo "--- pagoda-bench serve: 16 requests, 4 concurrent, 128 prompt + 32 generated tokens" >&2
  ./target/release/pagoda-bench serve --base-url "http://127.0.0.1:$PORT" --disable-progress \
    --num-prompts 16 --max-concurrency 4 --random-input-len 128 --random-output-len 32 \
    --metric-percentiles 50,99 --scrape-metrics "http://127.0.0.1:$PORT/metrics" \
    ${PAGODA_API_KEY:+--api-key "$PAGODA_API_KEY"}
fi
echo "--- serving on http://127.0.0.1:$PORT/v1 (metrics: /metrics); Ctrl-C stops" >&2
wait $SERVER
