#!/usr/bin/env bash
# What speculative decoding by prompt lookup (--speculative-config, method ngram) buys and costs
# on the default model (CPU): pagoda-bench runs against one server without and one with it, side
# by side in one run, on two workloads at 1 and at 8 concurrent requests:
#   - copy: chat requests that repeat, quote or lightly edit a ~500-token passage
#     (bench/spec_decode_workload.py), greedy, 128 output tokens: what prompt lookup is for;
#   - random: 512 random prompt tokens, 128 output tokens with --ignore-eos: text with nothing to
#     look up, so proposals are rare and rejected; this is the cost.
# With --llama-server BIN, llama.cpp's llama-server on the same GGUF runs beside them, without
# and with its own prompt lookup (--spec-type ngram-simple, 3-token lookup, 5-token drafts).
# With --disable-by-batch-size N, a third pagoda server runs prompt lookup with vLLM's
# "disable_by_batch_size": N (no proposals in steps with N or more running requests).
# Modes alternate within each round (off, ngram, [llama off, llama ngram,] off, …) so all see the
# same machine. Writes every result, the servers' logs and a summary (median TPOT, output tok/s,
# acceptance, and the ngram/off ratios) under bench/results/spec_decode_cpu/DATE/.
#
#   bench/spec_decode_cpu.sh [--rounds 2] [--num-prompts 8] [--k 5] [--bin-dir target/release]
#                            [--no-build] [--llama-server BIN] [--disable-by-batch-size N]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
ROUNDS=2 NUM_PROMPTS=8 K=5 BIN_DIR=target/release BUILD=1 LLAMA_SERVER="" CAP=""
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --num-prompts) NUM_PROMPTS=$2; shift 2 ;;
    --k) K=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --llama-server) LLAMA_SERVER=$2; shift 2 ;;
    --disable-by-batch-size) CAP=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
MODEL=$(scripts/fetch-default-model.sh)
[ "$BUILD" = 1 ] && cargo build --release --locked -q -p pagoda-server -p pagoda-bench
OUT="bench/results/spec_decode_cpu/$(date -u +%Y-%m-%d)"
mkdir -p "$OUT"
SPEC="{\"method\": \"ngram\", \"num_speculative_tokens\": $K, \"prompt_lookup_min\": 2, \"prompt_lookup_max\": 5}"
# Twice the prompts of the longest run, so that every run sends different ones by its seed.
python3 bench/spec_decode_workload.py "$OUT/copy.jsonl" --num-prompts $((NUM_PROMPTS * 2))
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "model: $MODEL"
  echo "speculative config: $SPEC"
  echo "rounds: $ROUNDS, prompts per run: $NUM_PROMPTS at 1 stream, $((NUM_PROMPTS * 2)) at 8"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')"
} >"$OUT/setup.txt"

LLAMA_SPEC=(--spec-type ngram-simple --spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m "$K"
  --spec-draft-n-max "$K")
MODES=(off ngram)
CAPPED_SPEC="${SPEC%\}}, \"disable_by_batch_size\": ${CAP:-0}}"
[ -n "$CAP" ] && MODES+=(ngram-capped) && echo "capped: $CAPPED_SPEC" >>"$OUT/setup.txt"
[ -n "$LLAMA_SERVER" ] && MODES+=(llama-off llama-ngram)
[ -n "$LLAMA_SERVER" ] && echo "llama.cpp: $("$LLAMA_SERVER" --version 2>&1 | grep -m1 version); prompt lookup: ${LLAMA_SPEC[*]}" >>"$OUT/setup.txt"

# Starts the server of `mode` on `port`; its pid in PIDS[mode].
declare -A PIDS PORTS
start_server() {
  local mode=$1 port=$2 log="$OUT/server-$1.log"
  case $mode in
    off | ngram | ngram-capped)
      local args=(--model "$MODEL" --served-model-name smollm2 --host 127.0.0.1 --port "$port")
      [ "$mode" = ngram ] && args+=(--speculative-config "$SPEC")
      [ "$mode" = ngram-capped ] && args+=(--speculative-config "$CAPPED_SPEC")
      "$BIN_DIR/pagoda-server" "${args[@]}" >"$log" 2>&1 &
      ;;
    llama-*)
      local args=(-m "$MODEL" -a smollm2 -t "$(nproc)" -tb "$(nproc)" -np 8 -c 8192 --no-webui
        --host 127.0.0.1 --port "$port")
      [ "$mode" = llama-ngram ] && args+=("${LLAMA_SPEC[@]}")
      "$LLAMA_SERVER" "${args[@]}" >"$log" 2>&1 &
      ;;
  esac
  PIDS[$mode]=$! PORTS[$mode]=$port
  wait_healthy "http://127.0.0.1:$port/health" "${PIDS[$mode]}" "$log"
}

# One pagoda-bench run: workload, concurrency, mode, round.
bench_one() {
  local workload=$1 concurrency=$2 mode=$3 round=$4 port=$5
  local name="$workload-c$concurrency-$mode-$round" num_prompts=$NUM_PROMPTS
  [ "$concurrency" -gt 1 ] && num_prompts=$((NUM_PROMPTS * 2))
  local data=(--dataset-name random --random-input-len 512 --random-output-len 128 --ignore-eos)
  [ "$workload" = copy ] && data=(--dataset-name custom --dataset-path "$OUT/copy.jsonl"
    --output-len 128 --endpoint /v1/chat/completions)
  echo "round $round: $workload, $concurrency streams, speculation $mode"
  local scrape=()
  [ "${mode#llama}" = "$mode" ] && scrape=(--scrape-metrics "http://127.0.0.1:$port/metrics")
  "$BIN_DIR/pagoda-bench" serve --base-url "http://127.0.0.1:$port" --model smollm2 \
    --tokenizer "$MODEL" "${data[@]}" --num-prompts "$num_prompts" \
    --max-concurrency "$concurrency" --seed "$round" --temperature 0 \
    ${scrape[@]+"${scrape[@]}"} --save-detailed \
    --save-result --result-filename "$OUT/bench-$name.json" >"$OUT/bench-$name.log" 2>&1
}

trap 'for pid in "${PIDS[@]}"; do stop_pid "$pid"; done' EXIT
for mode in "${MODES[@]}"; do
  start_server "$mode" "$(free_port)"
done
for ((round = 1; round <= ROUNDS; round++)); do
  for workload in copy random; do
    for concurrency in 1 8; do
      for mode in "${MODES[@]}"; do
        bench_one "$workload" "$concurrency" "$mode" "$round" "${PORTS[$mode]}"
      done
    done
  done
done
python3 - "$OUT" "$ROUNDS" "${MODES[*]}" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def load(workload, c, mode, r):
    return json.load(open(f"{out}/bench-{workload}-c{c}-{mode}-{r}.json"))

def row(server, workload, c, off, ngram):
    runs = {m: [load(workload, c, mode, r) for r in range(1, rounds + 1)]
            for m, mode in (("off", off), ("ngram", ngram))}
    tpot = {m: statistics.median(x["median_tpot_ms"] for x in runs[m]) for m in runs}
    tps = {m: statistics.median(x["output_throughput"] for x in runs[m]) for m in runs}
    spec = [x["pagoda"].get("server_side", {}).get("spec_decode") for x in runs["ngram"]]
    spec = [s for s in spec if s]
    rate = f"{statistics.median(s['acceptance_rate'] for s in spec) * 100:.1f}%" if spec else "—"
    length = f"{statistics.median(s['mean_acceptance_length'] for s in spec):.2f}" if spec else "—"
    same = total = 0
    for a_run, b_run in zip(runs["off"], runs["ngram"]):
        for a, b in zip(a_run.get("generated_texts", []), b_run.get("generated_texts", [])):
            total += 1
            same += a == b
    print(f"| {server} | {workload} | {c} | {tpot['off']:.1f} | {tpot['ngram']:.1f} | "
          f"{tpot['off'] / tpot['ngram']:.2f}× | {tps['ngram'] / tps['off']:.2f}× | "
          f"{rate} | {length} | {same}/{total} |")

print("| server | workload | streams | off: TPOT ms (median of rounds) | ngram: TPOT ms "
      "| TPOT off ÷ ngram | output tok/s ngram ÷ off | acceptance rate "
      "| tokens per verifying step | identical greedy texts |")
print("|---|---|---|---|---|---|---|---|---|---|")
for workload in ("copy", "random"):
    for c in (1, 8):
        row("pagoda", workload, c, "off", "ngram")
        if "ngram-capped" in modes:
            row("pagoda, disable_by_batch_size", workload, c, "off", "ngram-capped")
        if "llama-off" in modes:
            row("llama.cpp", workload, c, "llama-off", "llama-ngram")
if "llama-ngram" in modes:
    import re
    pairs = re.findall(r"\(\s*(\d+) accepted /\s*(\d+) generated\)", open(f"{out}/server-llama-ngram.log").read())
    accepted, generated = sum(int(a) for a, _ in pairs), sum(int(g) for _, g in pairs)
    if generated:
        print(f"\nllama.cpp's own count over all its ngram runs (its log): {accepted} of {generated} "
              f"drafted tokens accepted ({accepted / generated * 100:.1f}%).")
PY
exit 0
