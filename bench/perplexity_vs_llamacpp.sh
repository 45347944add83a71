#!/usr/bin/env bash
# Perplexity of a GGUF through pagoda-server's HTTP API against llama.cpp's own `llama-perplexity`
# on the same file and text (not CI: it needs llama.cpp built, ~25 minutes on 2 cores). The
# computation is llama-perplexity's (tools/perplexity/perplexity.cpp, mirrored in
# bench/perplexity_client.py): the whole text tokenized once, chunks of CTX tokens (the first
# token of each replaced by BOS when the model adds BOS), only the second half of each chunk
# scored (the logits at positions CTX/2 .. CTX-2 predict tokens CTX/2+1 .. CTX-1), PPL =
# exp(mean NLL). Ours: one /v1/completions request per chunk, the chunk's token ids as `prompt`,
# `max_tokens: 1`, vLLM's `prompt_logprobs: 0`. Both sides use the same ids: llama-server's
# /tokenize makes them, our /tokenize must give the same ones (checked), and llama-perplexity
# tokenizes the text with the same llama.cpp function. Run once per weight format.
#
# llama-perplexity runs once per LLAMA_FA value: first with its defaults (`-fa auto`, which turns
# its CPU flash-attention kernels on), the target's reference, then with `-fa off` (llama.cpp's
# non-flash attention path). When a python with torch and transformers is there, the same chunks
# also go through transformers (the GGUF dequantized to float32 by its own loader): a third opinion
# on which attention path computes the model.
#
#   bench/perplexity_vs_llamacpp.sh                 # the default model, all of the text, int8 and f32
#   CHUNKS=2 bench/perplexity_vs_llamacpp.sh        # the first 2 chunks only: does it work?
#
# Environment (defaults in brackets):
#   TEXT [bench/workloads/gpl-3.0.txt]: the text (read as llama.cpp's -f reads it: one trailing
#     newline dropped)
#   CTX [512]: the chunk length (llama-perplexity -c)    BATCH [CTX]: llama-perplexity -b
#   CHUNKS [all the text has]: the first CHUNKS chunks (llama-perplexity --chunks)
#   FORMATS [int8 f32]: our --weight-format values, one run each (f32: the GGUF's blocks dequantized)
#   LLAMA_FA [auto off]: llama-perplexity -fa values, one run each; the first is the target's reference
#   TRANSFORMERS_PYTHON [/work/refenv/bin/python when it imports transformers, else none]: the
#     python for the transformers row; TRANSFORMERS_PYTHON=none leaves it out
#   KV_DTYPE [auto]: our --kv-cache-dtype (auto = f16 on the CPU, as llama.cpp's default KV cache)
#   THREADS [nproc]: llama-perplexity/llama-server -t and our RAYON_NUM_THREADS
#   TOLERANCE [0.01]: the target, |our PPL / llama.cpp's - 1|; the script exits 3 when missed
#   MODEL [scripts/fetch-default-model.sh]
#   PAGODA_SERVER [a release build, built here when unset]
#   LLAMA_SERVER [bench/build_llama_server.sh], LLAMA_PERPLEXITY [llama-perplexity beside it]
#   OUT [bench/results/perplexity_vs_llamacpp/<UTC date>]: tokens.json, llama.cpp-fa-<value>.json,
#     ours-<format>.json, transformers.json, meta.json, table.md, logs/
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
COMMAND="bench/perplexity_vs_llamacpp.sh"
for var in TEXT CTX BATCH CHUNKS FORMATS LLAMA_FA KV_DTYPE THREADS TOLERANCE; do
  [ -n "${!var:-}" ] && COMMAND="$var=\"${!var}\" $COMMAND"
done
TEXT=${TEXT:-bench/workloads/gpl-3.0.txt}
CTX=${CTX:-512}
BATCH=${BATCH:-$CTX}
CHUNKS=${CHUNKS:-}
FORMATS=${FORMATS:-int8 f32}
LLAMA_FA=${LLAMA_FA:-auto off}
KV_DTYPE=${KV_DTYPE:-auto}
THREADS=${THREADS:-$(nproc)}
TOLERANCE=${TOLERANCE:-0.01}
[ -s "$TEXT" ] || { echo "text $TEXT not found" >&2; exit 2; }
for fmt in $FORMATS; do
  case "$fmt" in auto|int4|int8|f32|native) ;; *) echo "FORMATS: auto, int4, int8, f32 or native, not $fmt" >&2; exit 2 ;; esac
done

resolve_model_and_server
LLAMA_SERVER=${LLAMA_SERVER:-$(bench/build_llama_server.sh)}
LLAMA_PERPLEXITY=${LLAMA_PERPLEXITY:-$(dirname "$LLAMA_SERVER")/llama-perplexity}
if [ -z "${TRANSFORMERS_PYTHON:-}" ]; then
  TRANSFORMERS_PYTHON=none
  if [ -x /work/refenv/bin/python ] && /work/refenv/bin/python -c 'import torch, transformers, gguf' 2>/dev/null; then
    TRANSFORMERS_PYTHON=/work/refenv/bin/python
  fi
fi
for bin in "$PAGODA_SERVER" "$LLAMA_SERVER" "$LLAMA_PERPLEXITY"; do
  [ -x "$bin" ] || { echo "$bin not found" >&2; exit 2; }
done

OUT=${OUT:-bench/results/perplexity_vs_llamacpp/$(date -u +%Y-%m-%d)}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
CLIENT=(python3 bench/perplexity_client.py)

SERVER=""
cleanup() { if [ -n "$SERVER" ]; then stop_pid "$SERVER" 30; SERVER=""; fi; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. The token ids, from llama.cpp's tokenizer (llama-server's /tokenize), and its BOS rule.
port=$(free_port)
echo "== llama.cpp's tokenizer (llama-server /tokenize)" >&2
"$LLAMA_SERVER" -m "$MODEL" -t "$THREADS" -c "$CTX" -np 1 --no-webui --host 127.0.0.1 --port "$port" \
  >"$OUT/logs/llama-server.log" 2>&1 &
SERVER=$!
wait_healthy "http://127.0.0.1:$port/health" "$SERVER" "$OUT/logs/llama-server.log"
"${CLIENT[@]}" tokenize --llama "http://127.0.0.1:$port" --text "$TEXT" --out "$OUT/tokens.json"
cleanup

# 2. llama.cpp's own perplexity, once per -fa value (-lv 4: the log says what it resolved).
LLAMA_ARGS=(-m "$MODEL" -f "$TEXT" -c "$CTX" -b "$BATCH" -t "$THREADS")
[ -n "$CHUNKS" ] && LLAMA_ARGS+=(--chunks "$CHUNKS")
LLAMA_JSON=()
for fa in $LLAMA_FA; do
  echo "== llama-perplexity ${LLAMA_ARGS[*]} -fa $fa" >&2
  start_s=$SECONDS
  "$LLAMA_PERPLEXITY" "${LLAMA_ARGS[@]}" -fa "$fa" -lv 4 >"$OUT/logs/llama-perplexity-fa-$fa.log" 2>&1 ||
    { tail -n 20 "$OUT/logs/llama-perplexity-fa-$fa.log" >&2; exit 1; }
  echo "   $((SECONDS - start_s)) s: $(grep -m1 'Final estimate' "$OUT/logs/llama-perplexity-fa-$fa.log")" >&2
  "${CLIENT[@]}" llama-log --log "$OUT/logs/llama-perplexity-fa-$fa.log" --ctx "$CTX" \
    --label "llama.cpp -fa $fa" --out "$OUT/llama.cpp-fa-$fa.json"
  LLAMA_JSON+=("$OUT/llama.cpp-fa-$fa.json")
done

# 3. Ours, once per weight format.
OURS_ARGS=(--model "$MODEL" --max-num-seqs 1 --max-model-len $((CTX + 16)) --kv-cache-dtype "$KV_DTYPE"
  --no-enable-prefix-caching --disable-log-requests)
OURS_JSON=()
for fmt in $FORMATS; do
  port=$(free_port)
  echo "== pagoda-server --weight-format $fmt" >&2
  RAYON_NUM_THREADS=$THREADS "$PAGODA_SERVER" "${OURS_ARGS[@]}" --weight-format "$fmt" \
    --host 127.0.0.1 --port "$port" >"$OUT/logs/ours-$fmt.log" 2>&1 &
  SERVER=$!
  wait_healthy "http://127.0.0.1:$port/health" "$SERVER" "$OUT/logs/ours-$fmt.log"
  "${CLIENT[@]}" check-tokens --url "http://127.0.0.1:$port" --tokens "$OUT/tokens.json"
  "${CLIENT[@]}" score --url "http://127.0.0.1:$port" --tokens "$OUT/tokens.json" --ctx "$CTX" \
    ${CHUNKS:+--chunks "$CHUNKS"} --label "ours $fmt" --out "$OUT/ours-$fmt.json"
  OURS_JSON+=("$OUT/ours-$fmt.json")
  cleanup
done

# 4. transformers on the same chunks, when it is there.
REFERENCE_JSON=()
if [ "$TRANSFORMERS_PYTHON" != none ]; then
  echo "== transformers, float32 ($TRANSFORMERS_PYTHON)" >&2
  HF_HUB_OFFLINE=1 OMP_NUM_THREADS=$THREADS "$TRANSFORMERS_PYTHON" bench/perplexity_client.py transformers \
    --gguf "$MODEL" --tokens "$OUT/tokens.json" --ctx "$CTX" ${CHUNKS:+--chunks "$CHUNKS"} \
    --out "$OUT/transformers.json" 2>"$OUT/logs/transformers.log" || { tail -n 20 "$OUT/logs/transformers.log" >&2; exit 1; }
  REFERENCE_JSON+=("$OUT/transformers.json")
fi

# 5. The record and the table.
python3 - "$OUT/meta.json" <<PY
import json, sys
meta = {
  "command": """$COMMAND""",
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "machine": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores",
  "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "model": "$(basename "$MODEL") ($(stat -c %s "$MODEL") bytes)",
  "text": "$TEXT ($(stat -c %s "$TEXT") bytes, sha256 $(sha256sum "$TEXT" | cut -c1-16)…)",
  "llama.cpp": "$("$LLAMA_PERPLEXITY" --version 2>&1 | grep -m1 version || true)",
  "llama-perplexity": "${LLAMA_ARGS[*]} -fa {$LLAMA_FA} -lv 4",
  "transformers": "$([ "$TRANSFORMERS_PYTHON" = none ] && echo none || "$TRANSFORMERS_PYTHON" -c 'import torch, transformers; print(f"transformers {transformers.__version__}, torch {torch.__version__}")')",
  "ours": "RAYON_NUM_THREADS=$THREADS pagoda-server ${OURS_ARGS[*]} --weight-format {$FORMATS}",
  "pagoda-server": "$("$PAGODA_SERVER" --version 2>/dev/null || echo pagoda-server)",
  "python": "$(python3 --version 2>&1)",
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY
rc=0
"${CLIENT[@]}" table --llama "${LLAMA_JSON[@]}" --ours "${OURS_JSON[@]}" --reference "${REFERENCE_JSON[@]}" \
  --tolerance "$TOLERANCE" --meta "$OUT/meta.json" >"$OUT/table.md" || rc=$?
cat "$OUT/table.md"
echo "written: $OUT" >&2
exit "$rc"
