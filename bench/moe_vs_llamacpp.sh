#!/usr/bin/env bash
# Mixture of experts on CPU against llama.cpp: bench/make_moe_gguf.sh's random-weight Qwen3-MoE
# (1.8 B parameters, 64 experts, top-8, Q8_0 GGUF) served by pagoda-server and by llama.cpp's
# llama-server through bench/cpu_vs_llamacpp.sh (same client, seed, threads, slots and KV capacity;
# runs interleaved A/B/A/B; medians of REPEATS). The issue's target: our output tok/s >= 1.0x
# llama-server's (goal 1.3x), TPOT p50 no worse.
#
#   bench/moe_vs_llamacpp.sh                  # c8-128-128, REPEATS=2: ~14 minutes on the idle 2-core
#                                             # machine (NUM_PROMPTS=32: 7.5), 28-35 with other jobs on it
#   SMOKE=1 bench/moe_vs_llamacpp.sh          # 3 prompts, one run each: does it work? (3 minutes)
#
# Environment (defaults in brackets): everything bench/cpu_vs_llamacpp.sh and bench/make_moe_gguf.sh
# read, and
#   SCENARIOS [c8-128-128]  REPEATS [2; 1 with SMOKE=1]
#   OUT [bench/results/moe_vs_llamacpp/<UTC date>, or <UTC date>-smoke]
#   MAX_LOAD [1.0]: before starting, wait (60 s at a time, at most LOAD_WAIT_S [600] s) while the
#     1-minute load average is above it (bench/cpu_vs_llamacpp.sh then records, per run, the share
#     of the CPU other processes took)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODEL=${MODEL:-$(bench/make_moe_gguf.sh)}
export MODEL
export SCENARIOS=${SCENARIOS:-c8-128-128}
if [ "${SMOKE:-0}" = 1 ]; then
  export REPEATS=${REPEATS:-1}
  export OUT=${OUT:-bench/results/moe_vs_llamacpp/$(date -u +%Y-%m-%d)-smoke}
else
  export REPEATS=${REPEATS:-2}
  export OUT=${OUT:-bench/results/moe_vs_llamacpp/$(date -u +%Y-%m-%d)}
fi
MAX_LOAD=${MAX_LOAD:-1.0} LOAD_WAIT_S=${LOAD_WAIT_S:-600}
waited=0
while load=$(cut -d' ' -f1 /proc/loadavg) && awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN {exit !(l > m)}' \
  && [ "$waited" -lt "$LOAD_WAIT_S" ]; do
  echo "moe_vs_llamacpp: load $load > $MAX_LOAD: waiting 60 s" >&2
  sleep 60
  waited=$((waited + 60))
done
echo "moe_vs_llamacpp: $MODEL, load at start $(cut -d' ' -f1-3 /proc/loadavg)" >&2
mkdir -p "$OUT"
cut -d' ' -f1-3 /proc/loadavg >"$OUT/load_at_start.txt"
bench/cpu_vs_llamacpp.sh
