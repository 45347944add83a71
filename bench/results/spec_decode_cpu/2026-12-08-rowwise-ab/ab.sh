#!/usr/bin/env bash
set -euo pipefail
cd /work/main
. bench/common.sh
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
BENCH=target/release/pagoda-bench
declare -A BIN PORT PID
BIN[before]=/tmp/server-before-rowwise
BIN[after]=target/release/pagoda-server
for s in before after; do
  PORT[$s]=$(free_port)
  "${BIN[$s]}" --model $MODEL --host 127.0.0.1 --port ${PORT[$s]} --served-model-name m --disable-log-requests --no-enable-prefix-caching >/tmp/ab/$s.log 2>&1 &
  PID[$s]=$!
  wait_healthy "http://127.0.0.1:${PORT[$s]}/health" ${PID[$s]} /tmp/ab/$s.log
done
trap 'for s in before after; do stop_pid ${PID[$s]}; done' EXIT
measure() {
  local w=$1 s=$2 r=$3 args
  case $w in
    c1) args=(--random-input-len 512 --random-output-len 128 --num-prompts 6 --max-concurrency 1) ;;
    c8) args=(--random-input-len 512 --random-output-len 128 --num-prompts 16 --max-concurrency 8) ;;
  esac
  $BENCH serve --base-url http://127.0.0.1:${PORT[$s]} --model m --tokenizer $MODEL --dataset-name random --ignore-eos --temperature 0 --seed $r --disable-progress "${args[@]}" --save-result --result-dir /tmp/ab --result-filename r.json >/dev/null
  python3 -c "import json;d=json.load(open('/tmp/ab/r.json'));print('$w $s $r', round(d['output_throughput'],2), round(d['median_tpot_ms'],3), round(d['mean_ttft_ms'],1))"
}
for s in before after; do measure c1 $s 0 >/dev/null; done
for r in 1 2; do for w in c1 c8; do for s in before after; do measure $w $s $r; done; done; done
