#!/usr/bin/env bash
# CPU serving against llama.cpp (issue #21): pagoda-server and llama.cpp's llama-server on the same
# GGUF, the same threads, slots and KV capacity, driven one after the other by the same client
# with the same seed (so the same prompts and arrival times), per scenario: ours, then llama.cpp
# (A/B/A/B... with REPEATS), each run on a freshly started server whose peak RSS (VmHWM from
# /proc/PID/status, sampled until the server stops) is recorded. Writes the markdown table with
# ratios and the issue's goals marked met / not met (bench/cpu_vs_llamacpp_table.py).
#
#   bench/cpu_vs_llamacpp.sh                          # all scenarios, ~20 minutes on 2 cores (estimated)
#   SMOKE=1 bench/cpu_vs_llamacpp.sh                  # 3 prompts, 2 scenarios: does it work?
#   SCENARIOS="c1-128-128 prefill-2048-16" REPEATS=3 bench/cpu_vs_llamacpp.sh
#
# Scenarios (name: input / output tokens, load, default NUM_PROMPTS), random prompts, ignore_eos:
#   c1-128-128           128 / 128, 1 at a time, 24        c8-128-128       128 / 128, 8 at a time, 64
#   c4-512-64            512 / 64, 4 at a time, 32         prefill-2048-16  2048 / 16, 1 at a time, 6
#   poisson0.75-128-128  128 / 128, Poisson 0.75 req/s, 96 (no concurrency limit)
#   poisson1.5-128-128   128 / 128, Poisson 1.5 req/s, 96
#
# KV capacity, matched: llama-server -np NUM_SLOTS -c NUM_SLOTS*SLOT_CTX --no-kv-unified gives each
# of its NUM_SLOTS slots SLOT_CTX tokens (llama.cpp pads both to multiples of 256: keep SLOT_CTX a
# multiple of 256); pagoda-server --max-num-seqs NUM_SLOTS --max-model-len SLOT_CTX sizes its
# cache, by default, to exactly what those limits can use: the same NUM_SLOTS*SLOT_CTX tokens in
# one shared paged pool, a sequence at most SLOT_CTX. Both logs are checked: the run stops when
# either server reports another capacity. Both store K and V in f16 (ours: --kv-cache-dtype auto,
# KV_DTYPE to change it).
#
# Environment (defaults in brackets):
#   SMOKE [0]: 1 = NUM_PROMPTS 3, SCENARIOS "c8-128-128 prefill-2048-16", WARMUPS 1, REPEATS 1
#   SCENARIOS [all six]: names, space- or comma-separated    NUM_PROMPTS: one count for all of them
#   REPEATS [1]: runs per server and scenario, interleaved; the table shows medians
#   CLIENT [vllm when found, else pagoda]: `vllm bench serve` (VLLM, see bench/common.sh) or
#     `pagoda-bench serve` (PAGODA_BENCH); both get the same vLLM-style flags. vLLM's runs through
#     bench/vllm_fresh_connections.py (a new connection per request: llama-server closes kept-alive
#     connections, which vLLM's client reuses without retrying); VLLM_KEEP_ALIVE=1 runs it as is
#   ENDPOINT [/v1/completions]: exact prompt lengths, no chat template; or /v1/chat/completions
#   WARMUPS [2]: --num-warmups of each run (untabulated requests on the fresh server)
#   SEED [0]  THREADS [2]  NUM_SLOTS [8]  SLOT_CTX [2304]: 2048 + 16 tokens fit, with room
#   MODEL [scripts/fetch-default-model.sh]: the GGUF both servers serve
#   LLAMA_SERVER [bench/build_llama_server.sh: built into LLAMA_CPP_CACHE when missing]
#   PAGODA_SERVER, PAGODA_BENCH [a release build, built here when unset]
#   OUT [bench/results/cpu_vs_llamacpp/<UTC date>]: results/<scenario>/<server>-r<k>.json (the
#     client's), rss/*.csv, logs/, runs.tsv, meta.json and table.md
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
COMMAND="bench/cpu_vs_llamacpp.sh"
for var in SMOKE SCENARIOS NUM_PROMPTS REPEATS CLIENT ENDPOINT WARMUPS SEED THREADS NUM_SLOTS SLOT_CTX; do
  [ -n "${!var:-}" ] && COMMAND="$var=\"${!var}\" $COMMAND"
done
ALL_SCENARIOS="c1-128-128 c8-128-128 c4-512-64 poisson0.75-128-128 poisson1.5-128-128 prefill-2048-16"
if [ "${SMOKE:-0}" = 1 ]; then
  NUM_PROMPTS=${NUM_PROMPTS:-3}
  SCENARIOS=${SCENARIOS:-c8-128-128 prefill-2048-16}
  WARMUPS=${WARMUPS:-1}
fi
SCENARIOS=${SCENARIOS:-$ALL_SCENARIOS}
SCENARIOS=${SCENARIOS//,/ }
REPEATS=${REPEATS:-1}
ENDPOINT=${ENDPOINT:-/v1/completions}
WARMUPS=${WARMUPS:-2}
SEED=${SEED:-0}
THREADS=${THREADS:-2}
NUM_SLOTS=${NUM_SLOTS:-8}
SLOT_CTX=${SLOT_CTX:-2304}
KV_TOKENS=$((NUM_SLOTS * SLOT_CTX))
SERVED_NAME=bench-model
case "$ENDPOINT" in
  /v1/completions) BACKEND=openai ;;
  /v1/chat/completions) BACKEND=openai-chat ;;
  *) echo "ENDPOINT must be /v1/completions or /v1/chat/completions" >&2; exit 2 ;;
esac
[ $((SLOT_CTX % 256)) = 0 ] || echo "warning: llama.cpp pads SLOT_CTX=$SLOT_CTX to a multiple of 256" >&2

scenario_spec() { # name -> "input output concurrency rate num_prompts" (concurrency 0: none)
  case "$1" in
    c1-128-128) echo "128 128 1 inf 24" ;;
    c8-128-128) echo "128 128 8 inf 64" ;;
    c4-512-64) echo "512 64 4 inf 32" ;;
    poisson0.75-128-128) echo "128 128 0 0.75 96" ;;
    poisson1.5-128-128) echo "128 128 0 1.5 96" ;;
    prefill-2048-16) echo "2048 16 1 inf 6" ;;
    *) return 1 ;;
  esac
}
for name in $SCENARIOS; do
  scenario_spec "$name" >/dev/null || { echo "unknown scenario $name (known: $ALL_SCENARIOS)" >&2; exit 2; }
done

# --- binaries, model, client ---
MODEL=${MODEL:-$(scripts/fetch-default-model.sh)}
[ -s "$MODEL" ] || { echo "model file $MODEL not found" >&2; exit 2; }
MODEL=$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")
if [ -z "${CLIENT:-}" ]; then
  if find_vllm; then CLIENT=vllm; else CLIENT=pagoda; fi
fi
case "$CLIENT" in
  vllm) find_vllm || { echo "vLLM's CLI not found: set VLLM=/path/to/vllm or CLIENT=pagoda" >&2; exit 2; }
        ensure_vllm_tokenizer "$MODEL" ;;
  pagoda) ;;
  *) echo "CLIENT must be vllm or pagoda" >&2; exit 2 ;;
esac
if [ -z "${PAGODA_SERVER:-}" ] || { [ "$CLIENT" = pagoda ] && [ -z "${PAGODA_BENCH:-}" ]; }; then
  echo "building pagoda-server and pagoda-bench (release)" >&2
  cargo build --release --locked -q -p pagoda-server -p pagoda-bench --bins
  BIN_DIR=${CARGO_TARGET_DIR:-target}/release
  PAGODA_SERVER=${PAGODA_SERVER:-$BIN_DIR/pagoda-server}
  PAGODA_BENCH=${PAGODA_BENCH:-$BIN_DIR/pagoda-bench}
fi
LLAMA_SERVER=${LLAMA_SERVER:-$(bench/build_llama_server.sh)}
[ -x "$LLAMA_SERVER" ] || { echo "llama-server not found at $LLAMA_SERVER" >&2; exit 2; }

OUT=${OUT:-bench/results/cpu_vs_llamacpp/$(date -u +%Y-%m-%d)}
mkdir -p "$OUT/results" "$OUT/rss" "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
RUNS="$OUT/runs.tsv"
printf 'scenario\tserver\trepeat\tresult\tpeak_rss_kb\tclient_exit\tother_cpu_pct\n' >"$RUNS"
OURS_ARGS=(--model "$MODEL" --served-model-name "$SERVED_NAME" --max-num-seqs "$NUM_SLOTS"
  --max-model-len "$SLOT_CTX" --kv-cache-dtype "${KV_DTYPE:-auto}"
  --no-enable-prefix-caching --disable-log-requests)
LLAMA_ARGS=(-m "$MODEL" -a "$SERVED_NAME" -t "$THREADS" -tb "$THREADS" -np "$NUM_SLOTS"
  -c "$KV_TOKENS" --no-kv-unified --no-cache-prompt --cache-ram 0 --no-webui)

# --- one run: start a server, sample its VmHWM, run the client, stop both ---
SERVER="" SAMPLER="" CLIENT_PID=""
cleanup() {
  if [ -n "$CLIENT_PID" ]; then stop_pid "$CLIENT_PID" 5; fi
  if [ -n "$SAMPLER" ]; then stop_pid "$SAMPLER" 5; fi
  if [ -n "$SERVER" ]; then stop_pid "$SERVER" 30; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_server() { # server port log
  if [ "$1" = pagoda ]; then
    RAYON_NUM_THREADS=$THREADS "$PAGODA_SERVER" "${OURS_ARGS[@]}" --host 127.0.0.1 --port "$2" >"$3" 2>&1 &
  else
    "$LLAMA_SERVER" "${LLAMA_ARGS[@]}" --host 127.0.0.1 --port "$2" >"$3" 2>&1 &
  fi
  SERVER=$!
  wait_healthy "http://127.0.0.1:$2/health" "$SERVER" "$3"
}

check_capacity() { # server log: the KV capacity the server reports must be KV_TOKENS
  local found
  if [ "$1" = pagoda ]; then
    found=$(sed -nE 's/.*kv_capacity_tokens"?[=:] ?([0-9]+).*/\1/p' "$2" | head -n1)
    [ "$found" = "$KV_TOKENS" ] && return 0
  else
    # "load_model: initializing, n_slots = 8, n_ctx_slot = 2304, kv_unified = 'false'"
    found=$(sed -nE "s/.*n_slots = ([0-9]+), n_ctx_slot = ([0-9]+), kv_unified = 'false'.*/\\1 x \\2/p" "$2" | head -n1)
    [ "$found" = "$NUM_SLOTS x $SLOT_CTX" ] && return 0
  fi
  echo "$1 does not report a KV capacity of $KV_TOKENS tokens ($NUM_SLOTS x $SLOT_CTX): found '$found' in $2" >&2
  return 1
}

run_client() { # input output concurrency rate num_prompts base_url result_dir result_file
  local load=()
  if [ "$3" != 0 ]; then load+=(--max-concurrency "$3"); fi
  if [ "$4" != inf ]; then load+=(--request-rate "$4"); fi
  local common=(--base-url "$6" --model "$SERVED_NAME" --backend "$BACKEND" --endpoint "$ENDPOINT"
    --dataset-name random --random-input-len "$1" --random-output-len "$2" --random-range-ratio 0
    --ignore-eos --num-prompts "$5" "${load[@]}" --seed "$SEED" --num-warmups "$WARMUPS"
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99
    --save-result --save-detailed --result-dir "$7" --result-filename "$8")
  if [ "$CLIENT" = vllm ]; then
    local vllm_serve=("$(dirname "$VLLM")/python" bench/vllm_fresh_connections.py)
    if [ "${VLLM_KEEP_ALIVE:-0}" = 1 ]; then vllm_serve=("$VLLM" bench serve); fi
    HF_HUB_OFFLINE=1 "${vllm_serve[@]}" "${common[@]}" --tokenizer "$VLLM_TOKENIZER" --disable-tqdm &
  else
    "$PAGODA_BENCH" serve "${common[@]}" --tokenizer "$MODEL" --disable-progress &
  fi
  CLIENT_PID=$!
  local rc=0
  wait "$CLIENT_PID" || rc=$?
  CLIENT_PID=""
  return "$rc"
}

# Busy CPU seconds of the whole machine (user, nice, system, irq, softirq, steal) from /proc/stat.
machine_busy_s() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / {print ($2 + $3 + $4 + $7 + $8 + $9) / hz}' /proc/stat; }
# CPU seconds of this shell's waited-for children (servers, clients, samplers) into CHILDREN_CPU_S:
# `times`, second line. Not in $(...): a subshell has no children of this shell.
record_children_cpu() {
  times >"$OUT/logs/times.txt"
  CHILDREN_CPU_S=$(awk 'NR == 2 {s = 0; for (i = 1; i <= 2; i++) {split($i, t, "m"); s += t[1] * 60 + t[2]}
    print s}' "$OUT/logs/times.txt")
}

run_once() { # scenario server repeat
  local scenario=$1 server=$2 repeat=$3 tag="$1-$2-r$3" port rc=0 peak other_cpu_pct
  local busy_start children_start start_s
  local input output concurrency rate num_prompts
  read -r input output concurrency rate num_prompts <<<"$(scenario_spec "$scenario")"
  num_prompts=${NUM_PROMPTS:-$num_prompts}
  port=$(free_port)
  mkdir -p "$OUT/results/$scenario"
  record_children_cpu
  busy_start=$(machine_busy_s) children_start=$CHILDREN_CPU_S start_s=$EPOCHREALTIME
  start_server "$server" "$port" "$OUT/logs/$tag.server.log"
  check_capacity "$server" "$OUT/logs/$tag.server.log"
  python3 bench/soak_summary.py sample --pid "$SERVER" --interval-s 0.5 --csv "$OUT/rss/$tag.csv" \
    2>/dev/null &
  SAMPLER=$!
  echo "== $scenario: $server (run $repeat of $REPEATS), $num_prompts prompts" >&2
  run_client "$input" "$output" "$concurrency" "$rate" "$num_prompts" "http://127.0.0.1:$port" \
    "$OUT/results/$scenario" "$server-r$repeat.json" >"$OUT/logs/$tag.client.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || echo "   the client exited with status $rc: see $OUT/logs/$tag.client.log" >&2
  stop_pid "$SAMPLER" 5 # it takes one last sample on SIGTERM; VmHWM only grows
  SAMPLER=""
  stop_pid "$SERVER" 30
  SERVER=""
  # The share of the machine's CPU that other processes took during the run: noise on both sides.
  record_children_cpu
  other_cpu_pct=$(awk -v b0="$busy_start" -v b1="$(machine_busy_s)" -v c0="$children_start" \
    -v c1="$CHILDREN_CPU_S" -v t0="$start_s" -v t1="$EPOCHREALTIME" -v n="$(nproc)" \
    'BEGIN {v = 100 * ((b1 - b0) - (c1 - c0)) / ((t1 - t0) * n); printf "%.1f", v < 0 ? 0 : v}')
  peak=$(python3 -c 'import csv, sys
print(max((int(r["hwm_kb"]) for r in csv.DictReader(open(sys.argv[1])) if r["hwm_kb"]), default=""))' \
    "$OUT/rss/$tag.csv")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$scenario" "$server" "$repeat" \
    "results/$scenario/$server-r$repeat.json" "$peak" "$rc" "$other_cpu_pct" >>"$RUNS"
}

if [ "$CLIENT" = vllm ]; then
  CLIENT_VERSION="vllm bench serve $("$(dirname "$VLLM")/python" -c 'import vllm; print(vllm.__version__)' 2>/dev/null || echo '?')"
else
  CLIENT_VERSION=$("$PAGODA_BENCH" --version 2>/dev/null || echo pagoda-bench)
fi
META_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) META_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
  META_CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) META_CPUS=$(nproc) \
  META_LLAMA_VERSION=$("$LLAMA_SERVER" --version 2>&1 | grep -m1 version || true) \
  META_OURS="RAYON_NUM_THREADS=$THREADS pagoda-server ${OURS_ARGS[*]}" META_LLAMA="llama-server ${LLAMA_ARGS[*]}" \
  META_SCENARIOS=$(for s in $SCENARIOS; do echo "$s $(scenario_spec "$s")"; done) \
  COMMAND=$COMMAND MODEL=$MODEL CLIENT=$CLIENT CLIENT_VERSION=$CLIENT_VERSION LLAMA_SERVER=$LLAMA_SERVER \
  ENDPOINT=$ENDPOINT SEED=$SEED WARMUPS=$WARMUPS REPEATS=$REPEATS THREADS=$THREADS NUM_SLOTS=$NUM_SLOTS \
  SLOT_CTX=$SLOT_CTX KV_TOKENS=$KV_TOKENS KV_DTYPE=${KV_DTYPE:-auto} NUM_PROMPTS=${NUM_PROMPTS:-} \
  python3 bench/cpu_vs_llamacpp_table.py --write-meta "$OUT/meta.json"

for scenario in $SCENARIOS; do
  for repeat in $(seq "$REPEATS"); do
    run_once "$scenario" pagoda "$repeat"
    run_once "$scenario" llama.cpp "$repeat"
  done
done
python3 bench/cpu_vs_llamacpp_table.py "$OUT" | tee "$OUT/table.md"
