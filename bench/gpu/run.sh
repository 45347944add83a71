#!/usr/bin/env bash
# The GPU benchmark kit, run ON THE GPU MACHINE from the repository root, with the binaries that
# bench/gpu/pack.sh built on the CPU machine and packed into .gpu-carry/ (carried beside the
# working tree; no Rust, .git or network needed here). Weights are random
# (`--load-format dummy`) in the published shapes of bench/gpu/make_dummy_model.py. In order, each
# step logged to $OUT/<step>.log; a step that fails does not stop the next ones:
#   gpu_tests     the CUDA test executables (.gpu-carry/bin/gpu_tests*), --test-threads=1 --nocapture,
#                 with PAGODA_REQUIRE_GPU=1 (no silent skips) unless --smoke
#   decode_bench  benchmark 1: gpu_decode_bench on the Llama-3.2-1B shape, decode step time for
#                 batch sizes 1..256 at 512 tokens of context
#   serve         benchmark 2: pagoda-server on the Llama-3.2-1B shape (bf16, --max-model-len 4096),
#                 then pagoda-bench serve: random prompts of 128 tokens, exactly 128 output tokens
#                 (ignore_eos), 32 requests in flight, 320 prompts (after 32 warm-up requests);
#                 then the same workload sampled (temperature 0.8, top_p 0.95), 160 prompts
#   sweep         benchmark 3: pagoda-server on the Qwen3-0.6B shape (prefix caching off: every rate
#                 sends the same prompts), then pagoda-bench sweep over Poisson request rates
#                 (5..160 req/s, 8 s of arrivals each), 600-token prompts, 30 output tokens; the knee
# The run keeps within --budget-s (default 540: a device command may run 10 minutes); each step
# also has a budget of its own, and every command in it a timeout. --quick does every step with a
# fraction of the work (about 3 minutes).
#
#   OUT=DIR bench/gpu/run.sh [--quick] [--steps gpu_tests,decode_bench,serve,sweep]
#       [--rates 4,8,16] [--budget-s 540] [--port 18480] [--carry-dir .gpu-carry]
#
# --smoke is the CPU rehearsal that tests/tests/gpu_bench_kit.rs runs: the tiny shape on
# --device cpu with a handful of requests, otherwise the same commands. --print-serve-flags prints
# benchmark 2's workload flags, one per line (the test runs the same workload).
#
# Writes to $OUT (default bench/results/tmp/gpu-<UTC time>): machine.txt (GPU, driver, build
# revision, ...), summary.json (each step's status, exit code and seconds, and the parameters;
# rewritten after every step), <step>.log, <step>.server.log, ldd.txt, decode_bench.jsonl,
# serve_<shape>.json, sweep_<shape>/ (summary.json with the knee, summary.csv, results/, plots/)
# and summary.md: bench/gpu/summarize.py's Markdown, printed at the end too. Commit the folder as
# bench/results/gpu/<date>/. Exits 1 when a step failed.
# The step functions run through run_step and traps: not unreachable.
# shellcheck disable=SC2317
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

# What pack.sh puts in $CARRY/bin (each gzipped), besides the gpu_tests* test executables.
BINARIES=(pagoda-server pagoda-bench gpu_decode_bench)
TEST_PREFIX=gpu_tests

# Benchmark 2's workload (the count, seed and output flags are added where it runs).
# shellcheck disable=SC2054 # the commas are inside values
SERVE_FLAGS=(--endpoint /v1/completions --dataset-name random --random-input-len 128
  --random-output-len 128 --ignore-eos --max-concurrency 32 --request-rate inf
  --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99)
# Benchmark 3's workload (the rates, duration and count are added where it runs).
SWEEP_INPUT_LEN=600
SWEEP_OUTPUT_LEN=30
# shellcheck disable=SC2054
SWEEP_FLAGS=(--endpoint /v1/completions --dataset-name random --random-input-len "$SWEEP_INPUT_LEN"
  --random-output-len "$SWEEP_OUTPUT_LEN" --ignore-eos
  --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99)

QUICK=0
SMOKE=0
STEPS=gpu_tests,decode_bench,serve,sweep
RATES=
BUDGET_S=540
PORT=18480
CARRY=.gpu-carry
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --smoke) SMOKE=1; shift ;;
    --steps) STEPS=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --budget-s) BUDGET_S=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --carry-dir) CARRY=$2; shift 2 ;;
    --print-serve-flags) printf '%s\n' "${SERVE_FLAGS[@]}"; exit 0 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done

DEVICE=cuda
SERVE_SHAPE=llama-3.2-1b
SWEEP_SHAPE=qwen3-0.6b
MAX_MODEL_LEN=4096
# vLLM V1's defaults for an API server on an 80 GB GPU: 90% of the memory, 8192 batched tokens.
CUDA_SERVER_FLAGS=(--gpu-memory-utilization 0.9 --max-num-batched-tokens 8192)
DECODE_BATCHES=1,2,4,8,16,32,64,128,256
DECODE_CONTEXT=512
SERVE_PROMPTS=320
SERVE_WARMUPS=32
SERVE_MAX_S=100            # pagoda-bench --duration: a slow server still ends in time
SERVE_SAMPLED_PROMPTS=160  # the sampled run (temperature and top_p: rows sampled off the argmax)
SERVE_SAMPLED_MAX_S=50
SWEEP_RATES=5,10,20,30,40,60,80,120,160
SWEEP_DURATION_S=8
SWEEP_PROMPTS=500          # distinct prompts, cycled to rate x duration requests
SWEEP_REQUEST_TIMEOUT_S=15 # bounds the drain of an overloaded rate
HEALTH_TIMEOUT_S=300       # the first start JIT-compiles the kernels' PTX
# Seconds each step may take at most (the run's budget cuts them further).
BUDGET_GPU_TESTS=150 BUDGET_DECODE=100 BUDGET_SERVE=200 BUDGET_SWEEP=260
if [ "$QUICK" = 1 ]; then
  DECODE_BATCHES=1,16,256
  SERVE_PROMPTS=64 SERVE_MAX_S=30 SERVE_SAMPLED_PROMPTS=32 SERVE_SAMPLED_MAX_S=20
  SWEEP_RATES=10,40 SWEEP_DURATION_S=4 SWEEP_PROMPTS=128 SWEEP_REQUEST_TIMEOUT_S=10
fi
if [ "$SMOKE" = 1 ]; then
  DEVICE=cpu SERVE_SHAPE=tiny SWEEP_SHAPE=tiny MAX_MODEL_LEN=2048
  CUDA_SERVER_FLAGS=()
  DECODE_BATCHES=1,2
  SERVE_PROMPTS=8 SERVE_WARMUPS=4 SERVE_MAX_S=60 SERVE_SAMPLED_PROMPTS=4 SERVE_SAMPLED_MAX_S=60
  SWEEP_RATES=2,4 SWEEP_DURATION_S=2 SWEEP_PROMPTS=8 SWEEP_REQUEST_TIMEOUT_S=30
  HEALTH_TIMEOUT_S=60
fi
# On the GPU machine a GPU test that cannot open the device fails instead of skipping.
if [ "$SMOKE" = 0 ]; then
  export PAGODA_REQUIRE_GPU=1
fi
[ -n "$RATES" ] && SWEEP_RATES=$RATES

START=$(date +%s)
DEADLINE=$((START + BUDGET_S))
OUT=${OUT:-bench/results/tmp/gpu-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
BIN=$WORK/bin
STEP_PID=
cleanup() {
  local pidfile
  if [ -n "$STEP_PID" ]; then kill -TERM "$STEP_PID" 2>/dev/null || true; fi
  for pidfile in "$WORK"/*.pid; do
    if [ -f "$pidfile" ]; then kill -KILL "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { printf '[run.sh %4ds] %s\n' "$(($(date +%s) - START))" "$*"; }

PY=$(command -v python3 || true)
[ -n "$PY" ] || PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || { echo "no python3 found" >&2; exit 1; }

# --- CUDA libraries: the torch venv's CUDA 13 wheels, and the driver's libcuda.so.1 ---
# shellcheck source=bench/gpu/cuda-libs.sh
source "$ROOT/bench/gpu/cuda-libs.sh"
add_cuda_libraries "$DEVICE" || say "libcuda.so.1 not found (no NVIDIA driver?)"

# --- the carried binaries ---
[ -d "$CARRY/bin" ] || { echo "$CARRY/bin is missing: run bench/gpu/pack.sh and carry $CARRY" >&2; exit 1; }
mkdir -p "$BIN"
shopt -s nullglob
for gz in "$CARRY"/bin/*.gz; do
  name=$(basename "$gz" .gz)
  gunzip -c "$gz" >"$BIN/$name"
  chmod +x "$BIN/$name"
done
shopt -u nullglob
for name in "${BINARIES[@]}"; do
  [ -x "$BIN/$name" ] || say "missing from $CARRY/bin: $name.gz (the steps that need it fail)"
done
{
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  for exe in "$BIN"/*; do
    echo "--- ldd $(basename "$exe")"
    ldd "$exe" 2>&1 || true
  done
} >"$OUT/ldd.txt"
if grep -q 'not found' "$OUT/ldd.txt"; then
  say "unresolved libraries (see ldd.txt):"
  grep 'not found' "$OUT/ldd.txt" | sort -u
fi

# --- machine facts ---
REVISION=$(head -n 1 "$CARRY/REVISION" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
GPU_NAME=cpu driver='' memory=''
{
  if command -v nvidia-smi >/dev/null 2>&1; then
    IFS=, read -r GPU_NAME driver memory < <(nvidia-smi --query-gpu=name,driver_version,memory.total \
      --format=csv,noheader | head -n 1) || true
    echo "gpu: $GPU_NAME"
    echo "driver: ${driver# }"
    echo "gpu_memory: ${memory# }"
    echo "cuda: $(nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | cut -d' ' -f3 || true)"
  else
    echo "gpu: none (no nvidia-smi)"
  fi
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs || true)"
  echo "cpus: $(nproc)"
  echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "kernel: $(uname -r)"
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "revision: $REVISION"
  echo "python: $("$PY" --version 2>&1)"
  echo "device: $DEVICE"
  echo "quick: $QUICK"
  echo "--- $CARRY/REVISION"
  cat "$CARRY/REVISION" 2>/dev/null || true
  echo "--- $CARRY/MANIFEST"
  cat "$CARRY/MANIFEST" 2>/dev/null || true
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "--- nvidia-smi"
    nvidia-smi || true
    nvidia-smi --query-gpu=name,pci.bus_id,clocks.max.sm,clocks.max.memory,power.limit \
      --format=csv || true
  fi
} >"$OUT/machine.txt"
GPU_NAME=$(sed -n 's/^gpu: //p' "$OUT/machine.txt")
say "$GPU_NAME, revision $REVISION, results in $OUT"

# --- step bookkeeping: summary.json after every step ---
STEPS_TSV=$WORK/steps.tsv
: >"$STEPS_TSV"
write_summary() {
  "$PY" - "$STEPS_TSV" "$OUT/summary.json" \
    revision="$REVISION" started_utc="$(date -u -d "@$START" +%Y-%m-%dT%H:%M:%SZ)" \
    updated_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)" quick="$QUICK" smoke="$SMOKE" device="$DEVICE" \
    gpu="$GPU_NAME" budget_s="$BUDGET_S" \
    decode_shape="$SERVE_SHAPE" decode_batch_sizes="$DECODE_BATCHES" \
    decode_context_len="$DECODE_CONTEXT" serve_shape="$SERVE_SHAPE" serve_flags="${SERVE_FLAGS[*]}" \
    serve_num_prompts="$SERVE_PROMPTS" serve_max_duration_s="$SERVE_MAX_S" \
    serve_sampled_num_prompts="$SERVE_SAMPLED_PROMPTS" \
    max_model_len="$MAX_MODEL_LEN" sweep_shape="$SWEEP_SHAPE" sweep_rates="$SWEEP_RATES" \
    sweep_duration_s="$SWEEP_DURATION_S" sweep_num_prompts="$SWEEP_PROMPTS" \
    sweep_input_len="$SWEEP_INPUT_LEN" sweep_output_len="$SWEEP_OUTPUT_LEN" \
    sweep_request_timeout_s="$SWEEP_REQUEST_TIMEOUT_S" <<'PY'
import json, sys
steps = []
for line in open(sys.argv[1]):
    name, status, rc, seconds = line.rstrip("\n").split("\t")
    steps.append({"name": name, "status": status, "rc": int(rc) if rc else None,
                  "seconds": float(seconds) if seconds else None})
values = dict(arg.split("=", 1) for arg in sys.argv[3:])
def typed(text):
    try:
        return int(text)
    except ValueError:
        return text
top = ("revision", "started_utc", "updated_utc", "device", "gpu")
summary = {"kit": "bench/gpu/run.sh"}
summary.update({key: values.pop(key) for key in top})
summary["quick"] = values.pop("quick") == "1"
summary["smoke"] = values.pop("smoke") == "1"
summary["budget_s"] = int(values.pop("budget_s"))
summary["params"] = {key: typed(value) for key, value in values.items()}
summary["steps"] = steps
with open(sys.argv[2], "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
PY
}

# Seconds left to the current step's deadline (at least 1).
left() {
  local s=$((STEP_DEADLINE - $(date +%s)))
  if [ "$s" -gt 0 ]; then echo "$s"; else echo 1; fi
}
# A command under the step's remaining time (exit 124 when it ran out).
run_timed() { timeout -k 10 "$(left)" "$@"; }
need() { [ -x "$BIN/$1" ] || { echo "$1 is not in $CARRY/bin"; return 127; }; }

FAILED=0
# run_step NAME BUDGET_S FUNCTION: runs FUNCTION (with errexit) into $OUT/NAME.log.
run_step() {
  local name=$1 budget=$2 fn=$3
  case ",$STEPS," in *",$name,"*) ;; *) return 0 ;; esac
  local now remaining
  now=$(date +%s)
  remaining=$((DEADLINE - now - 10))
  if [ "$remaining" -lt 20 ]; then
    say "$name: skipped (the run's budget of ${BUDGET_S}s is spent)"
    printf '%s\tskipped\t\t\n' "$name" >>"$STEPS_TSV"
    write_summary
    FAILED=1
    return 0
  fi
  [ "$budget" -gt "$remaining" ] && budget=$remaining
  STEP_DEADLINE=$((now + budget))
  say "$name: started (budget ${budget}s)"
  local t0 rc=0
  t0=$(date +%s.%N)
  ("$fn") >"$OUT/$name.log" 2>&1 &
  STEP_PID=$!
  wait "$STEP_PID" || rc=$?
  STEP_PID=
  local seconds status=ok
  seconds=$("$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
  case $rc in
    0) status=ok ;;
    124 | 137) status=timeout ;;
    *) status=failed ;;
  esac
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$rc" "$seconds" >>"$STEPS_TSV"
  write_summary
  say "$name: $status (exit $rc) in ${seconds}s"
  if [ "$rc" != 0 ]; then
    FAILED=1
    tail -n 15 "$OUT/$name.log" | sed 's/^/    /'
  fi
}

# make_model SHAPE: the shape's model directory (written once per run).
make_model() {
  local dir=$WORK/models/$1
  [ -f "$dir/config.json" ] || "$PY" bench/gpu/make_dummy_model.py --shape "$1" --out "$dir" >/dev/null
  echo "$dir"
}

# start_server NAME MODEL_DIR PORT [FLAGS...]: pagoda-server in the background, log in
# $OUT/NAME.server.log; stop_server NAME stops it (both inside a step).
start_server() {
  local name=$1 model=$2 port=$3
  shift 3
  local command=("$BIN/pagoda-server" --model "$model" --load-format dummy --device "$DEVICE"
    --dtype bfloat16 --host 127.0.0.1 --port "$port" --max-model-len "$MAX_MODEL_LEN"
    --disable-log-requests --seed 0 "${CUDA_SERVER_FLAGS[@]}" "$@")
  echo "+ ${command[*]}"
  RUST_LOG=${RUST_LOG:-info} "${command[@]}" >"$OUT/$name.server.log" 2>&1 &
  echo $! >"$WORK/$name.pid"
}
stop_server() {
  local pidfile=$WORK/$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}
# wait_healthy NAME PORT: until /health answers 200; fails when the server exits or time runs out.
wait_healthy() {
  local name=$1 port=$2 t0 limit pid
  t0=$(date +%s)
  limit=$HEALTH_TIMEOUT_S
  [ "$(left)" -lt "$limit" ] && limit=$(left)
  pid=$(cat "$WORK/$name.pid")
  while :; do
    if "$PY" -c 'import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)
except Exception:
    sys.exit(1)' "http://127.0.0.1:$port/health"; then
      echo "server ready after $(($(date +%s) - t0)) s"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "pagoda-server exited before it was ready; the end of $name.server.log:"
      tail -n 30 "$OUT/$name.server.log"
      return 1
    fi
    if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
      echo "pagoda-server not ready after ${limit}s; the end of $name.server.log:"
      tail -n 30 "$OUT/$name.server.log"
      return 124
    fi
    sleep 1
  done
}
# bench SUBCOMMAND MODEL_DIR PORT [FLAGS...]: pagoda-bench against the local server.
bench() {
  local sub=$1 model=$2 port=$3
  shift 3
  echo "+ pagoda-bench $sub --tokenizer $model $*"
  run_timed "$BIN/pagoda-bench" "$sub" --base-url "http://127.0.0.1:$port" --tokenizer "$model" \
    --disable-progress --label pagoda "$@"
}

step_gpu_tests() {
  local tests=() t rc=0
  shopt -s nullglob
  tests=("$BIN/$TEST_PREFIX"*)
  shopt -u nullglob
  [ ${#tests[@]} -gt 0 ] || { echo "no $TEST_PREFIX* executables in $CARRY/bin"; return 127; }
  for t in "${tests[@]}"; do
    echo "=== $(basename "$t") --test-threads=1 --nocapture"
    # cargo runs a test executable in its package's folder: do the same.
    (cd engine && RUST_BACKTRACE=1 run_timed "$t" --test-threads=1 --nocapture) || rc=$?
    echo "=== $(basename "$t"): exit $rc"
  done
  return "$rc"
}

step_decode_bench() {
  need gpu_decode_bench
  local model
  model=$(make_model "$SERVE_SHAPE")
  echo "+ gpu_decode_bench --model $model --batch-sizes $DECODE_BATCHES --context-len $DECODE_CONTEXT"
  RUST_BACKTRACE=1 run_timed "$BIN/gpu_decode_bench" --model "$model" --batch-sizes "$DECODE_BATCHES" \
    --context-len "$DECODE_CONTEXT" --out "$OUT/decode_bench.jsonl"
  [ -s "$OUT/decode_bench.jsonl" ] || { echo "gpu_decode_bench wrote no lines"; return 1; }
  cat "$OUT/decode_bench.jsonl"
}

# gpu_memory WHEN: one line of $OUT/gpu_memory.tsv, the GPU's memory in use and in total (MiB),
# to set beside what --gpu-memory-utilization promises.
gpu_memory() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  printf '%s\t%s\n' "$1" "$(nvidia-smi --query-gpu=memory.used,memory.total \
    --format=csv,noheader,nounits | head -n 1)" >>"$OUT/gpu_memory.tsv" || true
}

step_serve() {
  need pagoda-server
  need pagoda-bench
  local model
  model=$(make_model "$SERVE_SHAPE")
  trap 'stop_server serve' EXIT
  start_server serve "$model" "$PORT"
  wait_healthy serve "$PORT"
  gpu_memory "after start-up"
  echo "--- warm-up: $SERVE_WARMUPS requests of other prompts (not recorded)"
  bench serve "$model" "$PORT" "${SERVE_FLAGS[@]}" --num-prompts "$SERVE_WARMUPS" --seed 1000
  echo "--- measured"
  bench serve "$model" "$PORT" "${SERVE_FLAGS[@]}" --num-prompts "$SERVE_PROMPTS" --seed 0 \
    --duration "$SERVE_MAX_S" --scrape-metrics "http://127.0.0.1:$PORT/metrics" \
    --save-result --result-dir "$OUT" --result-filename "serve_$SERVE_SHAPE.json" \
    --metadata "shape=$SERVE_SHAPE" "device=$DEVICE" "gpu=$GPU_NAME" "revision=$REVISION"
  gpu_memory "after the measured run"
  echo "--- measured, sampled (temperature 0.8, top_p 0.95)"
  bench serve "$model" "$PORT" "${SERVE_FLAGS[@]}" --num-prompts "$SERVE_SAMPLED_PROMPTS" --seed 0 \
    --temperature 0.8 --top-p 0.95 --duration "$SERVE_SAMPLED_MAX_S" \
    --save-result --result-dir "$OUT" --result-filename "serve_${SERVE_SHAPE}_sampled.json" \
    --metadata "shape=$SERVE_SHAPE" "sampling=temperature 0.8, top_p 0.95" "device=$DEVICE" \
    "gpu=$GPU_NAME" "revision=$REVISION"
}

step_sweep() {
  need pagoda-server
  need pagoda-bench
  local model port
  # A port free right now: PORT + 1 may be some client's ephemeral port (seen in the CPU
  # rehearsal, where tests run servers and clients side by side).
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  model=$(make_model "$SWEEP_SHAPE")
  trap 'stop_server sweep' EXIT
  start_server sweep "$model" "$port" --no-enable-prefix-caching
  wait_healthy sweep "$port"
  echo "--- warm-up: 16 requests of other prompts (not recorded)"
  bench serve "$model" "$port" "${SWEEP_FLAGS[@]}" --num-prompts 16 --max-concurrency 16 --seed 1000
  echo "--- sweep"
  bench sweep "$model" "$port" "${SWEEP_FLAGS[@]}" --request-rates "$SWEEP_RATES" \
    --duration "$SWEEP_DURATION_S" --num-prompts "$SWEEP_PROMPTS" --seed 0 \
    --request-timeout "$SWEEP_REQUEST_TIMEOUT_S" --scrape-metrics "http://127.0.0.1:$port/metrics" \
    --output-dir "$OUT/sweep_$SWEEP_SHAPE" \
    --metadata "shape=$SWEEP_SHAPE" "device=$DEVICE" "gpu=$GPU_NAME" "revision=$REVISION"
}

run_step gpu_tests "$BUDGET_GPU_TESTS" step_gpu_tests
run_step decode_bench "$BUDGET_DECODE" step_decode_bench
run_step serve "$BUDGET_SERVE" step_serve
run_step sweep "$BUDGET_SWEEP" step_sweep

"$PY" bench/gpu/summarize.py "$OUT" >"$OUT/summary.md" || say "summarize.py failed"
echo
cat "$OUT/summary.md"
echo
say "done: results in $OUT"
exit "$FAILED"
