#!/usr/bin/env bash
# CPU weight formats side by side on the default model: one pagoda-server per --weight-format
# (FORMATS, default "int4 vnni"), all up at once, driven in turn by pagoda-bench over HTTP so that
# every format sees the same machine, RUNS rounds of:
#   decode_c1   random 512-token prompts, 128 greedy output tokens (ignore_eos), 1 stream
#   decode_c8   the same at 8 streams
#   prefill     random 2,000-token prompts, 1 output token, 1 stream (TTFT is the prefill)
# Each measurement has the cores to itself; prefix caching is off (every round sends the same
# seeded prompts). Reports medians over the rounds of output tok/s, TTFT and TPOT, and each
# format's ratio to the first format's.
#
#   bench/weight_formats_cpu.sh [RUNS=3] [FORMATS="int4 vnni"]
#
# Appends one JSON line per measurement to bench/results/weight_formats_cpu-<date>.jsonl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
RUNS=${1:-${RUNS:-3}}
read -r -a FORMATS <<<"${2:-${FORMATS:-int4 vnni}}"
RESULTS="bench/results/weight_formats_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
resolve_model_and_server
BENCH=${PAGODA_BENCH:-$(dirname "$PAGODA_SERVER")/pagoda-bench}
[ -x "$BENCH" ] || cargo build --release --locked -q -p pagoda-bench
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus"
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
WORK=$(mktemp -d)
declare -A PORTS PIDS
cleanup() { for f in "${!PIDS[@]}"; do stop_pid "${PIDS[$f]}"; done; rm -rf "$WORK"; }
trap cleanup EXIT
for format in "${FORMATS[@]}"; do
  PORTS[$format]=$(free_port)
  "$PAGODA_SERVER" --model "$MODEL" --host 127.0.0.1 --port "${PORTS[$format]}" \
    --served-model-name m --disable-log-requests --no-enable-prefix-caching \
    --weight-format "$format" >"$WORK/$format.log" 2>&1 &
  PIDS[$format]=$!
  wait_healthy "http://127.0.0.1:${PORTS[$format]}/health" "${PIDS[$format]}" "$WORK/$format.log"
  grep -m1 "CPU weights" "$WORK/$format.log" | sed 's/.*INFO //' >&2 || true
done

measure() {
  local workload=$1 format=$2 round=$3 args
  case $workload in
    decode_c1) args=(--random-input-len 512 --random-output-len 128 --num-prompts 6 --max-concurrency 1) ;;
    decode_c8) args=(--random-input-len 512 --random-output-len 128 --num-prompts 16 --max-concurrency 8) ;;
    prefill) args=(--random-input-len 2000 --random-output-len 1 --num-prompts 4 --max-concurrency 1) ;;
  esac
  "$BENCH" serve --base-url "http://127.0.0.1:${PORTS[$format]}" --model m --tokenizer "$MODEL" \
    --dataset-name random --ignore-eos --temperature 0 --seed "$round" --disable-progress \
    "${args[@]}" --save-result --result-dir "$WORK" --result-filename r.json >/dev/null
  result_row "$WORK/r.json" weight_formats workload="$workload" format="$format" round="$round" \
    date="$DATE" cpu="$CPU" | tee -a "$RESULTS"
}

echo "== warm-up ($CPU)" >&2
for format in "${FORMATS[@]}"; do measure decode_c1 "$format" 0 >/dev/null; done
for round in $(seq "$RUNS"); do
  echo "== round $round of $RUNS" >&2
  for workload in decode_c1 decode_c8 prefill; do
    for format in "${FORMATS[@]}"; do measure "$workload" "$format" "$round"; done
  done
done
python3 - "$RESULTS" "$DATE" "${FORMATS[@]}" <<'PY'
import json, statistics, sys
path, date, formats = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [json.loads(l) for l in open(path) if l.strip()]
rows = [r for r in rows if r.get("date") == date and r["bench"] == "weight_formats"]
def med(workload, fmt, key):
    return statistics.median(r[key] for r in rows if r["workload"] == workload and r["format"] == fmt)
print("| workload | format | output tok/s | mean TTFT ms | median TPOT ms | tok/s ÷ first | TTFT first ÷ this | TPOT first ÷ this |")
print("|---|---|---|---|---|---|---|---|")
for workload in ("decode_c1", "decode_c8", "prefill"):
    base = {k: med(workload, formats[0], k) for k in ("output_throughput", "mean_ttft_ms", "median_tpot_ms")}
    for fmt in formats:
        tps, ttft, tpot = (med(workload, fmt, k) for k in ("output_throughput", "mean_ttft_ms", "median_tpot_ms"))
        tpot_ratio = f"{base['median_tpot_ms'] / tpot:.2f}×" if tpot else "—"
        tpot_cell = f"{tpot:.2f}" if tpot else "—"
        print(f"| {workload} | {fmt} | {tps:.1f} | {ttft:.0f} | {tpot_cell} | "
              f"{tps / base['output_throughput']:.2f}× | {base['mean_ttft_ms'] / ttft:.2f}× | {tpot_ratio} |")
PY
