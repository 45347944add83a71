# Shell functions shared by the bench scripts that start servers and drive them with a client.
# Source it (`. bench/common.sh`) from a script that has `set -euo pipefail`; nothing runs on load.
#
#   free_port                        a free TCP port on 127.0.0.1
#   wait_healthy URL PID LOG [S]     wait until GET URL answers 2xx (S seconds, default 600); fails
#                                    at once, with LOG's last lines, when process PID exits first
#   stop_pid PID [S]                 SIGTERM, then SIGKILL after S seconds (default 30); reaps it
#   find_vllm                        sets VLLM: $VLLM, else /work/vllm-venv/bin/vllm, else `vllm`
#                                    on PATH; returns 1 (VLLM empty) when there is none
#   ensure_vllm_tokenizer MODEL      sets VLLM_TOKENIZER [~/.cache/pagoda/hf-tokenizer-<model file
#                                    name>] and makes it once from the GGUF with vLLM's python:
#                                    vLLM's client needs a Hugging Face tokenizer directory and
#                                    cannot read a GGUF tokenizer
#   result_row FILE BENCH [K=V ...]  one JSON line: {"bench": BENCH}, the headline figures of the
#                                    pagoda-bench result FILE (output tok/s, TTFT, TPOT, tokens,
#                                    completed, failed), then each K=V (a number stays a number)
#   tag_rows [K=V ...]               each JSON line of stdin with every K=V added

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_healthy() {
  local url=$1 pid=$2 log=$3 timeout_s=${4:-600} i
  for ((i = 0; i < timeout_s * 5; i++)); do
    curl -sf "$url" >/dev/null 2>&1 && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the server (pid $pid) exited during start-up; the end of $log:" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "$url not healthy after $timeout_s s; see $log" >&2
  return 1
}

stop_pid() {
  local pid=$1 wait_s=${2:-30} i
  kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  for ((i = 0; i < wait_s * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

find_vllm() {
  if [ -z "${VLLM:-}" ]; then
    if [ -x /work/vllm-venv/bin/vllm ]; then VLLM=/work/vllm-venv/bin/vllm; else VLLM=$(command -v vllm || true); fi
  fi
  [ -n "$VLLM" ] && [ -x "$VLLM" ]
}

ensure_vllm_tokenizer() {
  local model=$1 python
  python=$(dirname "$VLLM")/python
  VLLM_TOKENIZER=${VLLM_TOKENIZER:-$HOME/.cache/pagoda/hf-tokenizer-$(basename "$model" .gguf)}
  [ -s "$VLLM_TOKENIZER/tokenizer.json" ] && return 0
  "$python" -c "import gguf" 2>/dev/null || "$python" -m pip install --quiet gguf
  echo "making vLLM's tokenizer directory $VLLM_TOKENIZER from $model" >&2
  "$python" - "$model" "$VLLM_TOKENIZER" <<'PY'
import os, sys
from transformers import AutoConfig, AutoTokenizer
model, out = sys.argv[1:]
where, name = os.path.dirname(os.path.abspath(model)), os.path.basename(model)
AutoTokenizer.from_pretrained(where, gguf_file=name).save_pretrained(out)
AutoConfig.from_pretrained(where, gguf_file=name).save_pretrained(out)  # vLLM reads model_type
PY
}

# Sets MODEL to an absolute path (MODEL as given, else the default model, fetched) and
# PAGODA_SERVER to an executable (as given, else a release build made here); exits 2 when missing.
resolve_model_and_server() {
  MODEL=${MODEL:-$(scripts/fetch-default-model.sh)}
  [ -s "$MODEL" ] || { echo "model file $MODEL not found" >&2; exit 2; }
  MODEL=$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")
  if [ -z "${PAGODA_SERVER:-}" ]; then
    echo "building pagoda-server (release)" >&2
    cargo build --release --locked -q -p pagoda-server --bins
    PAGODA_SERVER=${CARGO_TARGET_DIR:-target}/release/pagoda-server
  fi
  [ -x "$PAGODA_SERVER" ] || { echo "$PAGODA_SERVER not found" >&2; exit 2; }
}

result_row() {
  local file=$1 bench=$2; shift 2
  python3 - "$file" "$bench" "$@" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
keys = ("output_throughput", "mean_ttft_ms", "median_ttft_ms", "median_tpot_ms",
        "total_output_tokens", "completed", "failed")
row = {"bench": sys.argv[2], **{key: result.get(key) for key in keys}}
for pair in sys.argv[3:]:
    key, value = pair.split("=", 1)
    try:
        row[key] = json.loads(value)
    except ValueError:
        row[key] = value
print(json.dumps(row))
PY
}

tag_rows() {
  python3 -c 'import json, sys
tags = {}
for pair in sys.argv[1:]:
    key, value = pair.split("=", 1)
    tags[key] = value
for line in sys.stdin:
    if line.strip():
        row = json.loads(line); row.update(tags); print(json.dumps(row))' "$@"
}
