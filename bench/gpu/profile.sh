#!/usr/bin/env bash
# Where a decode step's GPU time goes: Nsight Compute (`ncu`, on the GPU machine) times every
# kernel of a run of gpu_decode_bench (Llama-3.2-1B shape, bf16, dummy weights), one CSV per
# batch size (gzipped), beside the unprofiled step times of the same command. Run ON THE
# GPU MACHINE from the repository root with the carried binaries (bench/gpu/pack.sh):
#
#   OUT=DIR bench/gpu/profile.sh [--batch-sizes 1,32] [--carry-dir .gpu-carry]
#
# ncu runs with `--clock-control none` (the machine's clocks as they are) and replays each
# profiled kernel, so the durations are the kernels' own, without launch gaps; the wall time of
# a step (gpu_decode_bench's greedy_step_ms) minus the sum of its kernels is the host's share
# (bench/gpu/profile_summary.py computes it here).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BATCHES=1,32
CARRY=.gpu-carry
while [ $# -gt 0 ]; do
  case "$1" in
    --batch-sizes) BATCHES=$2; shift 2 ;;
    --carry-dir) CARRY=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-bench/results/tmp/profile-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/gpu/cuda-libs.sh
source "$ROOT/bench/gpu/cuda-libs.sh"
add_cuda_libraries cuda || echo "libcuda.so.1 not found (no NVIDIA driver?)" >&2
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1 || true)
[ -n "$NCU" ] || { echo "no ncu on this machine" >&2; exit 1; }
gunzip -c "$CARRY/bin/gpu_decode_bench.gz" >"$WORK/gpu_decode_bench"
chmod +x "$WORK/gpu_decode_bench"
python3 bench/gpu/make_dummy_model.py --shape llama-3.2-1b --out "$WORK/model" >/dev/null
IFS=, read -r -a sizes <<<"$BATCHES"
for batch in "${sizes[@]}"; do
  # Unprofiled step times first, then every kernel of the same run under ncu (one metric, so
  # one replay each): the CSV lists kernels in launch order (model load, context fill, then the
  # logits-to-host, greedy and sampled steps), for bench/gpu/profile_summary.py.
  "$WORK/gpu_decode_bench" --model "$WORK/model" --batch-sizes "$batch" --iters 8 --warmup 2 \
    --out "$OUT/decode_b$batch.jsonl" >/dev/null
  "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
    "$WORK/gpu_decode_bench" --model "$WORK/model" --batch-sizes "$batch" --iters 8 --warmup 2 \
    2>"$OUT/ncu_b$batch.log" | gzip >"$OUT/ncu_b$batch.csv.gz" || echo "ncu failed for batch $batch"
  echo "batch $batch: $(gunzip -c "$OUT/ncu_b$batch.csv.gz" | grep -c gpu__time_duration || true) kernels profiled"
done
ls -la "$OUT"
