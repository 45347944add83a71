#!/usr/bin/env bash
# The README's first command: build pagoda-server (release), fetch the default model on first use,
# serve it on port ${PAGODA_PORT:-8000}, show one chat completion through the OpenAI endpoint, then
# keep serving until Ctrl-C (SIGINT drains in-flight requests and exits 0).
#
#   scripts/serve.sh [pagoda-server flags...]      e.g. scripts/serve.sh --api-key secret
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PORT=${PAGODA_PORT:-8000}
cargo build --release -q -p pagoda-server --bin pagoda-server
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
echo "--- serving on http://127.0.0.1:$PORT/v1 (metrics: /metrics); Ctrl-C stops" >&2
wait $SERVER
