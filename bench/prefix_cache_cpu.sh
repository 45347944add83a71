#!/usr/bin/env bash
# Time to first token of prompts sharing a 2,048-token prefix (+128 unique tokens), prefix cache
# off vs on, on the default model (CPU). Appends its JSON line to bench/results/.
#
#   bench/prefix_cache_cpu.sh [--prefix-len 2048] [--suffix-len 128] [--repeats 3]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODEL=$(scripts/fetch-default-model.sh)
cargo build --release -q -p pagoda-engine --example prefix_cache_bench
OUT="bench/results/prefix_cache_cpu-$(date -u +%Y-%m-%d).jsonl"
mkdir -p bench/results
{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\", \"cpus\": $(nproc), \"args\": \"$*\"}"
  ./target/release/examples/prefix_cache_bench "$MODEL" "$@"
} | tee -a "$OUT"
