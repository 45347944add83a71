set -euo pipefail
cd /work/main
. bench/common.sh
MODEL=$(scripts/fetch-default-model.sh)
BIN=/work/target-before/release
OUT=/tmp/repro; rm -rf $OUT; mkdir -p $OUT
P1=$(free_port); $BIN/pagoda-server --model "$MODEL" --served-model-name smollm2 --host 127.0.0.1 --port $P1 >$OUT/off.log 2>&1 & A=$!
P2=$(free_port); $BIN/pagoda-server --model "$MODEL" --served-model-name smollm2 --host 127.0.0.1 --port $P2 --speculative-config '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 5}' >$OUT/ngram.log 2>&1 & B=$!
trap 'stop_pid $A; stop_pid $B' EXIT
wait_healthy http://127.0.0.1:$P1/health $A $OUT/off.log; wait_healthy http://127.0.0.1:$P2/health $B $OUT/ngram.log
for m in off ngram; do p=$P1; [ $m = ngram ] && p=$P2
  for c in 1 8; do
  $BIN/pagoda-bench serve --base-url http://127.0.0.1:$p --model smollm2 --tokenizer "$MODEL" --dataset-name random --random-input-len 512 --random-output-len 128 --ignore-eos --num-prompts 16 --max-concurrency $c --seed 1 --temperature 0 --save-detailed --save-result --result-filename $OUT/$m-c$c.json >$OUT/$m-c$c.log 2>&1
  done
done
