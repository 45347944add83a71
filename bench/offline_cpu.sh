#!/usr/bin/env bash
# Offline generation benchmark of the engine on the default model (CPU).
# 128-token random prompts, 128 generated tokens (ignore_eos, greedy), closed loop at each
# concurrency level; prints one JSON line per level and appends them to bench/results/.
#
#   bench/offline_cpu.sh [--concurrency 1,8] [--rounds 3] [--weight-format int8|f32|native] ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODEL=$(scripts/fetch-default-model.sh)
cargo build --release -q -p pagoda-engine --example offline_bench
OUT="bench/results/offline_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\", \"cpus\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"args\": \"$*\"}"
  ./target/release/examples/offline_bench "$MODEL" --concurrency 1,8 --rounds 3 "$@"
} | tee -a "$OUT"
